import type { IncomingMessage, ServerResponse } from 'node:http';

/** coglet's body limit (MAX_HTTP_BODY_SIZE: 100 MiB; axum would allow 2 MiB, too little for images inline). */
export const MAX_BODY_BYTES = 100 * 1024 * 1024;

/** The request body, or undefined when it is over `MAX_BODY_BYTES` (the rest is not read). */
export async function readBody(req: IncomingMessage): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** A plain-text answer, as axum gives for a body it cannot extract. */
export function sendText(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** An empty answer (axum's 404 for an unknown route and 405 for a known one with another method). */
export function sendEmpty(res: ServerResponse, status: number, headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...headers, 'content-length': 0 });
  res.end();
}
