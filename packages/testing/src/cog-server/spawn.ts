import { spawn } from 'node:child_process';
import path from 'node:path';
import { endOrphanedServers, recordServer } from '../owned-servers';
import { waitFor } from '../wait';
import type { ModelName } from './models';
import type { OutputAs } from './output-files';

const ROOT = path.resolve(__dirname, '../../../..');
const MAIN = path.join(__dirname, 'main.ts');
const READY_LINE = /^cog server listening on (http:\/\/\S+)$/m;

/** Options of {@link spawnCogServer}: main.ts's flags. */
export interface SpawnCogServerOptions {
  model: ModelName;
  /** Default 0: the server picks a free port and says which. */
  port?: number;
  host?: string;
  concurrency?: number;
  setupMs?: number;
  outputAs?: OutputAs;
  streaming?: boolean;
  historyCapacity?: number;
  failMessage?: string;
  faceOutput?: 'boxes' | 'face_coordinates';
}

export interface SpawnedCogServer {
  url: string;
  pid: number;
  /** SIGTERM, then waits for the process to exit. */
  stop(): Promise<void>;
}

function flags(opts: SpawnCogServerOptions): string[] {
  const given: Array<[string, string | number | boolean | undefined]> = [
    ['model', opts.model],
    ['port', opts.port ?? 0],
    ['host', opts.host],
    ['concurrency', opts.concurrency],
    ['setup-ms', opts.setupMs],
    ['output-as', opts.outputAs],
    ['streaming', opts.streaming],
    ['history-capacity', opts.historyCapacity],
    ['fail-message', opts.failMessage],
    ['face-output', opts.faceOutput],
  ];
  return given.flatMap(([name, value]) => (value === undefined ? [] : [`--${name}`, String(value)]));
}

/**
 * The Cog test server as a child process (main.ts through tsx, from the repo root), for tests and
 * the chaos run that need a model server they can kill. Recorded as this process's, so a test run
 * killed before its cleanup has it ended by the next start of a server.
 */
export async function spawnCogServer(opts: SpawnCogServerOptions): Promise<SpawnedCogServer> {
  endOrphanedServers();
  const child = spawn(process.execPath, ['--import', 'tsx', MAIN, ...flags(opts)], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const forget = child.pid === undefined ? () => undefined : recordServer(child.pid, 'cog-server');
  let exitCode: number | null | undefined;
  let failed: Error | undefined; // e.g. node could not be started
  const exited = new Promise<void>((resolve) => {
    child.once('exit', (code) => {
      exitCode = code;
      resolve();
    });
    child.once('error', (error) => {
      failed = error;
      resolve();
    });
  }).then(forget);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr = (stderr + chunk.toString()).slice(-4_000)));
  let url: string;
  try {
    const started = await waitFor<{ url: string } | { error: Error }>(
      () => {
        if (failed) return { error: failed };
        if (exitCode !== undefined) return { error: new Error(`the Cog server exited with code ${exitCode}: ${stderr.trim()}`) };
        const found = READY_LINE.exec(stdout)?.[1];
        return found ? { url: found } : undefined;
      },
      { timeoutMs: 30_000, intervalMs: 20, what: `the Cog server (${opts.model}) to listen` },
    );
    if ('error' in started) throw started.error;
    url = started.url;
  } catch (error) {
    child.kill('SIGKILL');
    await exited;
    throw error;
  }
  return {
    url,
    pid: child.pid as number,
    stop: async () => {
      if (exitCode === undefined) child.kill('SIGTERM');
      await exited;
    },
  };
}
