import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request as the server saw it. */
export interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

/** What the server does with a request: answer, drop the connection, never answer, or send headers and half a body. */
export type Act =
  | { status: number; json?: unknown; text?: string; bytes?: Buffer; headers?: Record<string, string> }
  | 'reset'
  | 'hang'
  | 'partial';

export interface ScriptedServer {
  url: string;
  seen: Seen[];
  /** The next answers, in order; when used up, `fallback` answers. */
  script(...acts: Act[]): void;
  fallback: (req: Seen) => Act;
  close(): Promise<void>;
}

/** A local HTTP server that misbehaves on purpose, one scripted act per request. */
export async function startScriptedServer(): Promise<ScriptedServer> {
  const queue: Act[] = [];
  const seen: Seen[] = [];
  const hanging = new Set<http.ServerResponse>();
  const state: ScriptedServer = {
    url: '',
    seen,
    script: (...acts) => void queue.push(...acts),
    fallback: () => ({ status: 404, json: { message: 'Task not found.' } }),
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const entry: Seen = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString(), at: Date.now() };
      seen.push(entry);
      const act = queue.shift() ?? state.fallback(entry);
      if (act === 'reset') return void req.socket.destroy();
      if (act === 'hang') return void hanging.add(res);
      if (act === 'partial') {
        res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': '1000' });
        res.write(Buffer.alloc(10));
        return void hanging.add(res);
      }
      const headers: Record<string, string> = { 'x-request-id': `req_test${seen.length}`, ...act.headers };
      if (act.json !== undefined) headers['content-type'] = 'application/json';
      res.writeHead(act.status, headers);
      res.end(act.json !== undefined ? JSON.stringify(act.json) : (act.bytes ?? act.text));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

/** A task as the API renders it, for scripted answers. */
export function fakeTask(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    public_id: 'task_3kT9xQ2mLp7Vn4Rb8Yc1Zd',
    kind: 'image-generation',
    status: 0,
    error_code: null,
    error_message: null,
    input: { prompt: 'p', width: 64, height: 64 },
    payload: null,
    callback_url: null,
    cost: 2,
    created_at: '2026-01-01T00:00:00.000Z',
    started_at: null,
    finished_at: null,
    result: null,
    files: [],
    files_expired_at: null,
    ...overrides,
  };
}
