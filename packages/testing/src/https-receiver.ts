import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { IncomingHttpHeaders } from 'node:http';
import { testCa } from './test-ca';
import { waitFor } from './wait';

/** One request as the receiver saw it: the exact body bytes and when it arrived. */
export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: Buffer;
  receivedAt: number;
}

/** What to answer: a status, or a status with a body. */
export type ReceiverReply = number | { status: number; body?: string | Buffer; headers?: Record<string, string> };

export interface HttpsReceiver {
  /** `https://localhost:<port><path>` (the certificate is for localhost). */
  url(path?: string): string;
  received: ReceivedRequest[];
  /** TLS connections accepted so far. */
  readonly handshakes: number;
  /** Requests whose path starts with `path`. */
  at(path: string): ReceivedRequest[];
  waitForCount(path: string, n: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  close(): Promise<void>;
}

/**
 * A real HTTPS server with a certificate from the test CA. `reply` decides each answer from the
 * request and how many requests that path has seen (1-based); it may return a promise to hold
 * the response.
 */
export async function startHttpsReceiver(
  reply: (req: ReceivedRequest, nth: number) => ReceiverReply | Promise<ReceiverReply> = () => 204,
  opts: { cert?: string; key?: string; keepAliveTimeoutMs?: number } = {},
): Promise<HttpsReceiver> {
  const ca = testCa();
  const received: ReceivedRequest[] = [];
  const server = https.createServer({ key: opts.key ?? ca.serverKey, cert: opts.cert ?? ca.serverCert }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const entry: ReceivedRequest = {
        method: req.method ?? '',
        path: req.url ?? '/',
        headers: req.headers,
        body: Buffer.concat(chunks),
        receivedAt: Date.now(),
      };
      received.push(entry);
      const nth = received.filter((r) => r.path === entry.path).length;
      void Promise.resolve(reply(entry, nth)).then(
        (answer) => {
          const r = typeof answer === 'number' ? { status: answer } : answer;
          res.writeHead(r.status, r.headers);
          res.end(r.body);
        },
        () => res.destroy(),
      );
    });
  });
  // Keep-alive sockets would hold close() open. (Advertised as `Keep-Alive: timeout=1`, which undici
  // takes as too short to reuse: every request gets a new connection unless `keepAliveTimeoutMs` says otherwise.)
  server.keepAliveTimeout = opts.keepAliveTimeoutMs ?? 1_000;
  let handshakes = 0;
  server.on('secureConnection', () => handshakes++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const at = (path: string) => received.filter((r) => r.path.startsWith(path));
  return {
    url: (path = '/') => `https://localhost:${port}${path}`,
    received,
    get handshakes() {
      return handshakes;
    },
    at,
    waitForCount: (path, n, timeoutMs = 20_000) =>
      waitFor(() => (at(path).length >= n ? at(path) : undefined), { timeoutMs, what: `${n} request(s) at ${path}` }),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
