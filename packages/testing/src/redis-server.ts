import { spawn } from 'node:child_process';
import { Redis } from 'ioredis';
import { freePort } from './free-port';
import { waitFor } from './wait';

export interface PrivateRedis {
  url: string;
  stop(): Promise<void>;
}

/**
 * A redis-server of its own on a free port (nothing saved), for a test that reads the server's
 * own statistics (`INFO commandstats`), which other test files would disturb on the shared one.
 */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let failed: Error | undefined;
  child.once('error', (err) => {
    failed = err; // e.g. no redis-server on this machine
  });
  const url = `redis://127.0.0.1:${port}`;
  const ready = waitFor(
    async () => {
      const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => undefined); // refused until the server listens; connect() rejects too
      try {
        await probe.connect();
        return (await probe.ping()) === 'PONG';
      } finally {
        probe.disconnect();
      }
    },
    { timeoutMs: 10_000, intervalMs: 50, what: `redis-server on ${port}` },
  );
  try {
    await ready;
  } catch (err) {
    child.kill('SIGKILL');
    throw failed ?? err;
  }
  return {
    url,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}
