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

/**
 * What the server does with a request: answer, drop the connection, never answer, send headers and
 * half a body, or stream server-sent events (`sse`: the chunks, written one by one) and then end the
 * body, keep it open, or drop the connection.
 */
export type Act =
  | { status: number; json?: unknown; text?: string; bytes?: Buffer; headers?: Record<string, string> }
  | { sse: string[]; then: 'end' | 'hang' | 'reset' }
  | 'reset'
  | 'hang'
  | 'partial';

/** One `event: task` as the API sends it. */
export const taskEvent = (task: Record<string, unknown>) => `event: task\ndata: ${JSON.stringify(task)}\n\n`;

export interface ScriptedServer {
  url: string;
  seen: Seen[];
  /** Requests whose connection the client closed before the server ended the answer. */
  closedByClient: number;
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
    closedByClient: 0,
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
      if ('sse' in act) {
        res.on('close', () => {
          if (!res.writableFinished) state.closedByClient++;
        });
        res.writeHead(200, { 'content-type': 'text/event-stream', 'x-request-id': `req_test${seen.length}` });
        // Dropped once the last chunk is on its way.
        const last = act.then === 'reset' ? () => req.socket.destroy() : undefined;
        act.sse.forEach((chunk, i) => res.write(chunk, i === act.sse.length - 1 ? last : undefined));
        if (act.then === 'end') res.end();
        else if (act.then === 'hang') hanging.add(res);
        else if (act.sse.length === 0) req.socket.destroy();
        return;
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
