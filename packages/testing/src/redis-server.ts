import { spawn } from 'node:child_process';
import net from 'node:net';
import { freePort } from './free-port';
import { endOrphanedServers, recordServer } from './owned-servers';
import { waitFor } from './wait';

export interface PrivateRedis {
  url: string;
  /** The redis-server's process id. */
  pid: number;
  stop(): Promise<void>;
}

/**
 * A redis-server of its own on a free port (nothing saved), for a test that reads the server's
 * own statistics (`INFO commandstats`), which other test files would disturb on the shared one.
 */
export async function startPrivateRedis(): Promise<PrivateRedis> {
  endOrphanedServers();
  const port = await freePort();
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
  const forget = child.pid === undefined ? () => undefined : recordServer(child.pid, 'redis-server');
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve())).then(forget);
  let failed: Error | undefined;
  child.once('error', (err) => {
    failed = err; // e.g. no redis-server on this machine
  });
  const url = `redis://127.0.0.1:${port}`;
  const ready = waitFor(() => answersPing(port), { timeoutMs: 10_000, intervalMs: 50, what: `redis-server on ${port}` });
  try {
    await ready;
  } catch (err) {
    child.kill('SIGKILL');
    throw failed ?? err;
  }
  return {
    url,
    pid: child.pid as number,
    stop: async () => {
      child.kill('SIGTERM');
      await exited;
    },
  };
}

/**
 * True once a server on `port` answers PING (Redis's inline protocol over a plain socket: a client
 * library would keep its reconnect timers alive after the probe, delaying the test run's exit).
 */
export function answersPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString('latin1');
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}
