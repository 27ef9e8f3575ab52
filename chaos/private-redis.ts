// The run's own Redis server on a free port, without persistence (`--save "" --appendonly no`):
// killing and starting it again is "Redis restarted with its data gone". Never the shared 6379.
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import { answersPing, freePort } from '@taskapi/testing';

export interface PrivateRedis {
  url: string;
  /** kill -9, `pauseMs` down, then a fresh empty server on the same port; resolves once it answers PING. */
  restartEmpty(pauseMs: number): Promise<void>;
  stop(): Promise<void>;
}

async function untilPing(port: number, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await answersPing(port))) {
    if (Date.now() > deadline) throw new Error(`private Redis on port ${port} did not answer PING`);
    await delay(50);
  }
}

export async function startPrivateRedis(dir: string, logFile: string): Promise<PrivateRedis> {
  const port = await freePort();
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir, '--logfile', logFile];
  let server: ChildProcess | undefined;
  const start = async () => {
    server = spawn('redis-server', args, { stdio: 'ignore', detached: true });
    await untilPing(port);
  };
  const kill = async () => {
    const s = server;
    server = undefined;
    if (!s || s.exitCode !== null || s.signalCode !== null) return;
    const exited = new Promise((resolve) => s.once('exit', resolve));
    s.kill('SIGKILL');
    await exited;
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    async restartEmpty(pauseMs) {
      await kill();
      await delay(pauseMs);
      await start();
    },
    stop: kill,
  };
}
