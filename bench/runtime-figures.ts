// Figures of the production runtime, printed by `npm run bench`: how long each service takes from
// process start to ready, built (`node dist/*.js`, what the image runs) vs. from source through the
// TypeScript launcher (tsx, how services ran before the build existed); resident memory; and how
// long a worker takes to exit on SIGTERM while a video task is encoding.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { median } from './stats';

const ROOT = path.resolve(__dirname, '..');
const TSX = path.join(ROOT, 'node_modules/tsx/dist/cli.mjs');

export type Service = 'api' | 'worker' | 'webhook-dispatcher';

export const READY_LINE: Record<Service, string> = {
  api: 'api listening',
  worker: 'worker started',
  'webhook-dispatcher': 'webhook dispatcher started',
};
const SOURCE: Record<Service, string> = {
  api: 'services/api/src/main.ts',
  worker: 'services/worker/src/main.ts',
  'webhook-dispatcher': 'services/webhook-dispatcher/src/main.ts',
};

/** The command line of a service: built (what `npm run start:*` and the image run) or from source. */
export function serviceCommand(service: Service, from: 'built' | 'tsx'): [string, string[]] {
  return from === 'built'
    ? [process.execPath, ['--enable-source-maps', path.join(ROOT, 'dist', `${service}.js`)]]
    : [process.execPath, [TSX, path.join(ROOT, SOURCE[service])]];
}

export interface StartedService {
  pid: number;
  /** Milliseconds from spawn to the service's ready log line. */
  readyMs: number;
  /** Resolves with the exit code. */
  exited: Promise<number | null>;
  /** Sends SIGTERM; resolves with the milliseconds until the process exited. */
  stop(): Promise<number>;
}

/** Starts a service and resolves when it logged that it is ready (LOG_LEVEL must be info or lower). */
export function startService(service: Service, from: 'built' | 'tsx', env: NodeJS.ProcessEnv): Promise<StartedService> {
  const [command, args] = serviceCommand(service, from);
  const started = performance.now();
  const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${service} did not start`)), 60_000);
    void exited.then((code) => reject(new Error(`${service} exited with ${code}`)));
    const lines = readline.createInterface({ input: child.stdout! });
    lines.on('line', (line) => {
      if (!line.includes(`"${READY_LINE[service]}"`)) return;
      clearTimeout(timer);
      const readyMs = performance.now() - started;
      resolve({
        pid: child.pid!,
        readyMs,
        exited,
        async stop() {
          const t = performance.now();
          if (child.exitCode === null) child.kill('SIGTERM');
          await exited;
          return performance.now() - t;
        },
      });
    });
  });
}

/** Resident memory of a process, in MB (Linux): now (VmRSS), or its peak so far (`peak`: VmHWM). */
export function rssMb(pid: number, which: 'now' | 'peak' = 'now'): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = which === 'peak' ? 'VmHWM' : 'VmRSS';
  return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? NaN) / 1024;
}

/** CPU time (user + system) a process has used so far, in ms (Linux; 0 once it is gone). */
export function cpuMs(pid: number): number {
  const fields = statFields(pid);
  return fields ? ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS : 0;
}

/**
 * The fields of `/proc/<pid>/stat` after the command name (which may hold spaces): the state
 * first, then ppid (1), …, utime (11), stime (12), cutime (13), cstime (14). Undefined once the
 * process is gone.
 */
export function statFields(pid: number | string): string[] | undefined {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/**
 * CPU time (ms) of a process and every process below it, those that ended included: its own, what
 * its reaped children used (`cutime`, `cstime`), and its living children's, recursively. For the
 * PostgreSQL server: the postmaster's tree holds every backend, the short-lived ones too, and the
 * background writers.
 */
export function treeCpuMs(pid: number): number {
  const children = new Map<number, number[]>();
  for (const entry of fs.readdirSync('/proc')) {
    const fields = /^\d+$/.test(entry) ? statFields(entry) : undefined;
    if (!fields) continue;
    const ppid = Number(fields[1]);
    children.set(ppid, [...(children.get(ppid) ?? []), Number(entry)]);
  }
  const own = (p: number): number => {
    const f = statFields(p);
    return f ? ((Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) * 1000) / CLOCK_TICKS : 0;
  };
  const walk = (p: number): number => own(p) + (children.get(p) ?? []).reduce((sum, c) => sum + walk(c), 0);
  return walk(pid);
}

/** USER_HZ: 100 on every Linux this runs on (`getconf CLK_TCK`). */
const CLOCK_TICKS = 100;

/** Median start-to-ready time of each service, built and through tsx (three starts each). */
export async function measureStartup(env: NodeJS.ProcessEnv): Promise<Array<{ service: Service; builtMs: number; tsxMs: number }>> {
  const figures = [];
  for (const service of ['api', 'worker', 'webhook-dispatcher'] as const) {
    const times: Record<'built' | 'tsx', number[]> = { built: [], tsx: [] };
    for (let round = 0; round < 3; round++) {
      for (const from of ['built', 'tsx'] as const) {
        const s = await startService(service, from, env);
        times[from].push(s.readyMs);
        await s.stop();
      }
    }
    figures.push({ service, builtMs: median(times.built), tsxMs: median(times.tsx) });
  }
  return figures;
}

/**
 * A worker (built) running a 10-second MP4 video task through ffmpeg gets SIGTERM once the task is
 * processing: milliseconds until the process exited, and its exit code.
 */
export async function measureWorkerStop(base: string, key: string, env: NodeJS.ProcessEnv): Promise<{ ms: number; code: number | null }> {
  const worker = await startService('worker', 'built', { ...env, WORKER_KINDS: 'video-generation', VIDEO_FORMAT: 'mp4' });
  const res = await fetch(`${base}/api/tasks/video-generation`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'shutdown timing', duration_seconds: 10 }),
  });
  const { public_id: publicId } = (await res.json()) as { public_id: string };
  const deadline = Date.now() + 30_000;
  for (;;) {
    const task = (await (await fetch(`${base}/api/tasks/${publicId}`, { headers: { 'x-api-key': key } })).json()) as { status: number };
    if (task.status === 10) break;
    if (Date.now() > deadline) throw new Error('the video task did not start');
    await new Promise((r) => setTimeout(r, 20));
  }
  await new Promise((r) => setTimeout(r, 200)); // well into the encoding
  const ms = await worker.stop();
  return { ms, code: await worker.exited };
}
