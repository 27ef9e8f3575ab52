// Starting and stopping the processes the bench measures.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { serviceCommand, type Service } from './runtime-figures';

export const ROOT = path.resolve(__dirname, '..');

export async function waitUntilReady(url: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const ok = await fetch(url).then((r) => r.ok, () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not become ready`);
}

/** Spawns a command and resolves once its stdout matched `ready` (stdout is drained afterwards). */
export function startProcess(command: [string, string[]], env: NodeJS.ProcessEnv, ready: RegExp): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const entry = command[1].at(-1);
  return new Promise((resolve, reject) => {
    const child = spawn(command[0], command[1], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
    let buffered = '';
    const timer = setTimeout(() => reject(new Error(`${entry} did not start`)), 30_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const m = ready.exec(buffered);
      if (m) {
        clearTimeout(timer);
        child.stdout?.removeAllListeners('data');
        child.stdout?.resume();
        resolve({ child, match: m });
      }
    });
    child.on('exit', (code) => reject(new Error(`${entry} exited with ${code}`)));
  });
}

const READY: Record<Exclude<Service, 'api'>, RegExp> = { worker: /"worker started"/, 'webhook-dispatcher': /"webhook dispatcher started"/ };

/**
 * Starts a built worker or dispatcher (LOG_LEVEL info: the ready line is an info line). With
 * BENCH_CPU_PROF_DIR set, each writes a CPU profile there when it stops (`npm run profile -- <file>`).
 */
export async function startBuilt(service: Exclude<Service, 'api'>, env: NodeJS.ProcessEnv): Promise<ChildProcess> {
  return (await startProcess(profiled(service, service), { ...env, LOG_LEVEL: 'info' }, READY[service])).child;
}

/** The service's built command, with BENCH_CPU_PROF_DIR set writing a CPU profile `<name>-<ms>.cpuprofile` there when it stops. */
function profiled(service: Service, name: string): [string, string[]] {
  const [node, args] = serviceCommand(service, 'built');
  const profileDir = process.env.BENCH_CPU_PROF_DIR;
  return profileDir ? [node, ['--cpu-prof', `--cpu-prof-dir=${profileDir}`, `--cpu-prof-name=${name}-${Date.now()}.cpuprofile`, ...args]] : [node, args];
}

export async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.removeAllListeners('exit');
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

/**
 * Starts the built API; resolves when /readyz answers. Its warnings and errors reach the terminal,
 * its access lines are drained. With BENCH_CPU_PROF_DIR set it writes a profile named `profile`
 * (default `api`) when it stops.
 */
export async function startApi(env: NodeJS.ProcessEnv, profile = 'api'): Promise<ChildProcess> {
  const [command, args] = profiled('api', profile);
  const api = spawn(command, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit'] });
  // A line split between two chunks is put together first.
  let partial = '';
  api.stdout?.on('data', (chunk: Buffer) => {
    const end = chunk.lastIndexOf(10);
    const complete = end === -1 ? '' : partial + chunk.subarray(0, end).toString();
    partial = end === -1 ? partial + chunk.toString() : chunk.subarray(end + 1).toString();
    if (!complete.includes('"level":"warn"') && !complete.includes('"level":"error"')) return;
    for (const line of complete.split('\n')) if (/"level":"(warn|error)"/.test(line)) process.stderr.write(`api: ${line}\n`);
  });
  await waitUntilReady(`http://127.0.0.1:${env.PORT}/readyz`);
  return api;
}
