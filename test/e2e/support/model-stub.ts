import { setTimeout as delay } from 'node:timers/promises';
import { CogFile, startCogServer, validateInput, waitFor, type CogModel, type CogServer } from '@taskapi/testing';
import { TINY_GIF } from './held-model';

/**
 * What the model does with one prediction: finish after `delayMs` (a tiny image), or, with
 * `canceled`, end as cancelled on the model server (a failure the worker retries), or hold it
 * until released.
 */
export type StubAnswer = { delayMs: number; canceled?: boolean } | 'hold';

export interface ModelRequest {
  publicId: string;
  /** 1 for the task's first prediction, 2 for its retry, … (a run that re-attaches starts none). */
  n: number;
  /** When it started running and when it ended (Date.now() ms). */
  at: number;
  endedAt?: number;
}

/**
 * A Cog model server for tests of who runs when: it records every prediction (which task, in
 * what order, when it ended) and answers as `policy` says, so a test can give tasks a run time or
 * hold them while it looks at what else is running. It runs many predictions at once, so it is
 * never the bottleneck (the workers' slots are).
 */
export interface ModelStub {
  url: string;
  server: CogServer;
  requests: ModelRequest[];
  /** Tasks whose prediction is running now (held or waiting out its delay). */
  inFlight(): string[];
  /** Lets a held prediction of the task finish; false when none is held. */
  release(publicId: string): boolean;
  releaseAll(): void;
  /** Waits until `n` predictions have started in all. */
  waitForRequests(n: number, timeoutMs?: number): Promise<ModelRequest[]>;
  close(): Promise<void>;
}

/** The task of a prediction id (`<public_id>-<attempt>`). */
const taskOf = (predictionId: string) => predictionId.slice(0, predictionId.lastIndexOf('-'));

export async function startModelStub(policy: (publicId: string, n: number) => StubAnswer): Promise<ModelStub> {
  const requests: ModelRequest[] = [];
  const held = new Map<string, () => void>();
  let url = '';
  const model: CogModel = {
    name: 'stub',
    streaming: false,
    inputSchema: {},
    validate: (input) => validateInput({}, input),
    async run(_input, { id, signal }) {
      const publicId = taskOf(id);
      const record: ModelRequest = { publicId, n: requests.filter((r) => r.publicId === publicId).length + 1, at: Date.now() };
      requests.push(record);
      try {
        const decision = policy(publicId, record.n);
        if (decision === 'hold') {
          await new Promise<void>((resolve, reject) => {
            held.set(publicId, resolve);
            signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
          });
        } else {
          await delay(decision.delayMs, undefined, { signal });
          if (decision.canceled) {
            // Cancelled on the model server (as an operator or a preemption would).
            const cancelled = new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true }));
            cancelled.catch(() => undefined);
            const res = await fetch(`${url}/predictions/${encodeURIComponent(id)}/cancel`, { method: 'POST' });
            if (res.status !== 200) throw new Error(`the model server would not cancel ${id}: ${res.status}`);
            await cancelled;
          }
        }
        return new CogFile('out.gif', 'image/gif', TINY_GIF);
      } finally {
        record.endedAt = Date.now();
        held.delete(publicId);
      }
    },
  };
  const server = await startCogServer({ model, concurrency: 256 });
  url = server.url;
  const release = (publicId: string) => {
    const resolve = held.get(publicId);
    held.delete(publicId);
    resolve?.();
    return resolve !== undefined;
  };
  return {
    url,
    server,
    requests,
    inFlight: () => requests.filter((r) => r.endedAt === undefined).map((r) => r.publicId),
    release,
    releaseAll() {
      for (const id of [...held.keys()]) release(id);
    },
    waitForRequests: (n, timeoutMs = 30_000) =>
      waitFor(() => (requests.length >= n ? requests : undefined), { timeoutMs, intervalMs: 20, what: `${n} model predictions (got ${requests.length})` }),
    close: () => server.close(),
  };
}
