import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as delay } from 'node:timers/promises';
import { waitFor } from '@taskapi/testing';

/** What the stub does with one request: answer after `delayMs` (200 with a tiny image, or `status`), or hold it until released. */
export type StubAnswer = { delayMs: number; status?: number } | 'hold';

export interface ModelRequest {
  publicId: string;
  /** 1 for the task's first request, 2 for its retry, … */
  n: number;
  /** When it arrived and when its answer went out (Date.now() ms). */
  at: number;
  endedAt?: number;
}

/**
 * A model server speaking the `http` engine's protocol, for tests of who runs when: it records
 * every request (which task, in what order, when it ended) and answers as `policy` says, so a test
 * can give tasks a run time or hold them while it looks at what else is running.
 */
export interface ModelStub {
  url: string;
  requests: ModelRequest[];
  /** Tasks whose request is being served now (held or waiting out its delay). */
  inFlight(): string[];
  /** Answers a held request of the task (200); false when none is held. */
  release(publicId: string): boolean;
  releaseAll(): void;
  /** Waits until `n` requests have arrived in all. */
  waitForRequests(n: number, timeoutMs?: number): Promise<ModelRequest[]>;
  close(): Promise<void>;
}

const TINY_PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');

export async function startModelStub(policy: (publicId: string, n: number) => StubAnswer): Promise<ModelStub> {
  const requests: ModelRequest[] = [];
  const held = new Map<string, () => void>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const publicId = String((JSON.parse(Buffer.concat(chunks).toString()) as { public_id: string }).public_id);
      const record: ModelRequest = { publicId, n: requests.filter((r) => r.publicId === publicId).length + 1, at: Date.now() };
      requests.push(record);
      const answer = (status = 200) => {
        record.endedAt = Date.now();
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(
          status === 200
            ? JSON.stringify({ result: { ok: true }, files: [{ name: 'image.png', content_type: 'image/png', data_base64: TINY_PNG.toString('base64') }] })
            : JSON.stringify({ message: 'model busy, try again' }),
        );
      };
      const decision = policy(publicId, record.n);
      if (decision === 'hold') held.set(publicId, () => answer());
      else void delay(decision.delayMs).then(() => answer(decision.status));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const release = (publicId: string) => {
    const answer = held.get(publicId);
    held.delete(publicId);
    answer?.();
    return answer !== undefined;
  };
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    requests,
    inFlight: () => requests.filter((r) => r.endedAt === undefined).map((r) => r.publicId),
    release,
    releaseAll() {
      for (const id of [...held.keys()]) release(id);
    },
    waitForRequests: (n, timeoutMs = 30_000) =>
      waitFor(() => (requests.length >= n ? requests : undefined), { timeoutMs, intervalMs: 20, what: `${n} model requests (got ${requests.length})` }),
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}
