// The webhook receiver of the bench: HTTPS with the test CA's localhost certificate, answering 204
// at once, counting per path. Lighter than the test suite's receiver (which rescans every request
// it kept on each arrival): at thousands of deliveries per round that scan would cost more CPU
// than the sender being measured.
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { testCa } from '@taskapi/testing';

/** Wall-clock milliseconds with sub-millisecond precision (comparable with Date.now()). */
export const nowMs = (): number => performance.timeOrigin + performance.now();

export interface Arrival {
  at: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

export interface BenchReceiver {
  /** `https://localhost:<port><path>`. */
  url(path: string): string;
  arrivals(path: string): Arrival[];
  /** Resolves with the arrivals at `path` once there are `n` of them. */
  waitFor(path: string, n: number, timeoutMs: number): Promise<Arrival[]>;
  close(): Promise<void>;
}

export async function startBenchReceiver(): Promise<BenchReceiver> {
  const ca = testCa();
  const byPath = new Map<string, Arrival[]>();
  const waiters = new Map<string, Array<{ n: number; resolve: (a: Arrival[]) => void }>>();
  const server = https.createServer({ key: ca.serverKey, cert: ca.serverCert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const list = byPath.get(path) ?? [];
      byPath.set(path, list);
      list.push({ at: nowMs(), headers: req.headers, body: Buffer.concat(chunks) });
      res.writeHead(204).end();
      const pending = waiters.get(path);
      if (pending) {
        for (const w of pending.filter((x) => list.length >= x.n)) w.resolve(list);
        waiters.set(path, pending.filter((x) => list.length < x.n));
      }
    });
  });
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: (path) => `https://localhost:${port}${path}`,
    arrivals: (path) => byPath.get(path) ?? [],
    waitFor(path, n, timeoutMs) {
      const list = byPath.get(path) ?? [];
      if (list.length >= n) return Promise.resolve(list);
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`only ${(byPath.get(path) ?? []).length} of ${n} webhooks at ${path} after ${timeoutMs} ms`)), timeoutMs);
        const entry = {
          n,
          resolve: (a: Arrival[]) => {
            clearTimeout(timer);
            resolve(a);
          },
        };
        waiters.set(path, [...(waiters.get(path) ?? []), entry]);
      });
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
