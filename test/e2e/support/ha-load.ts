// Customers during a failover (test/e2e/redis-sentinel.test.ts, postgres-failover.test.ts): clients
// creating image tasks with a callback and an Idempotency-Key, retrying 503s after their
// Retry-After and network failures with the same key (as the SDK does), every answer counted; then
// the checks of the promise: every task answered 201 finished, was announced, and was charged once.
import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { waitFor, type HttpsReceiver } from '@taskapi/testing';
import { createKey, seedAccount, startApi, type CreatedKey, type TestAccount, type TestApi } from '../../../services/api/test/support/harness';
import { startDispatcher, startWorker, type RunningService } from './system';
import { ledgerOf } from './tasks';

/**
 * Timings of the failover tests: sweepers every second (they put back what a Redis failover lost),
 * a stalled job noticed within 3 s, webhook retries within a second. `HA_LOG=warn` shows the
 * services' lines while debugging.
 */
const FAILOVER_TIMINGS = {
  SWEEPER_INTERVAL_MS: '1000',
  WORKER_LOCK_DURATION_MS: '3000',
  WEBHOOK_RETRY_DELAYS_MS: '300,600,1000',
  WEBHOOK_TIMEOUT_MS: '2000',
  LOG_LEVEL: process.env.HA_LOG ?? 'silent',
};

export interface FailoverSystem {
  env: Record<string, string>;
  api: TestApi;
  worker: RunningService;
  dispatcher: RunningService;
  account: TestAccount;
  key: CreatedKey;
}

/** The API, a worker and a dispatcher in this process on `backends` (plus the failover timings), and a paid account with a million credits. */
export async function startFailoverSystem(backends: Record<string, string>): Promise<FailoverSystem> {
  const env = { ...backends, ...FAILOVER_TIMINGS };
  const api = await startApi(env);
  const [worker, dispatcher] = await Promise.all([startWorker(env), startDispatcher(env)]);
  const account = await seedAccount(api, { credits: 1_000_000 });
  const key = await createKey(api, account, { type: 'paid' });
  return { env, api, worker, dispatcher, account, key };
}

export interface LoadAnswers {
  /** Status codes of every attempt; network failures as `network`. */
  statuses: Map<number | 'network', number>;
  /** 503s answered without a Retry-After header. */
  withoutRetryAfter: number;
  /** Tasks answered 201, in order. */
  created: string[];
  /** When each 201 was answered (ms since the epoch), same order. */
  createdAt: number[];
}

export class CreationLoad {
  readonly answers: LoadAnswers = { statuses: new Map(), withoutRetryAfter: 0, created: [], createdAt: [] };
  private stopped = false;
  private readonly running: Promise<void>[];

  constructor(
    private readonly api: TestApi,
    private readonly apiKey: string,
    private readonly callbackUrl: string,
    clients: number,
    /** Pause between one client's creations. */
    private readonly spacingMs = 40,
  ) {
    this.running = Array.from({ length: clients }, (_, c) => this.client(c));
  }

  private count(status: number | 'network'): void {
    this.answers.statuses.set(status, (this.answers.statuses.get(status) ?? 0) + 1);
  }

  private async client(c: number): Promise<void> {
    for (let n = 0; !this.stopped; n++) {
      const idempotencyKey = randomUUID();
      const body = JSON.stringify({ prompt: `failover ${c}-${n}`, width: 64, height: 64, callback_url: this.callbackUrl });
      // Once begun, a creation is carried through (retried) even after stop(): a client keeps its word.
      for (let attempt = 0; ; attempt++) {
        let waitMs = Math.min(1_000, 50 * 2 ** attempt);
        try {
          const res = await fetch(`${this.api.url}/api/tasks/image-generation`, {
            method: 'POST',
            headers: { 'x-api-key': this.apiKey, 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
            body,
            signal: AbortSignal.timeout(15_000),
          });
          const text = await res.text();
          this.count(res.status);
          if (res.status === 201) {
            this.answers.created.push((JSON.parse(text) as { public_id: string }).public_id);
            this.answers.createdAt.push(Date.now());
            break;
          }
          if (res.status !== 503) break; // counted; anything but 201 and 503 fails the test
          const retryAfter = Number(res.headers.get('retry-after'));
          if (!(retryAfter > 0)) this.answers.withoutRetryAfter++;
          else waitMs = Math.min(waitMs, retryAfter * 1000);
        } catch {
          this.count('network');
        }
        await delay(waitMs);
      }
      await delay(this.spacingMs);
    }
  }

  /** Stops starting creations; resolves when every begun one has its answer. */
  async stop(): Promise<LoadAnswers> {
    this.stopped = true;
    await Promise.all(this.running);
    return this.answers;
  }
}

/** Statuses other than 201 and 503 (a 500 above all) that the clients were answered. */
export function unexpectedStatuses(answers: LoadAnswers): Array<[number | 'network', number]> {
  return [...answers.statuses].filter(([status]) => status !== 201 && status !== 503 && status !== 'network');
}

/**
 * The promise, for each task in `ids`: it reached `completed`, its webhook arrived at `receiver`'s
 * `hookPath` (at least once), and its ledger holds exactly one charge and no refund.
 */
export async function expectEveryTaskSettled(api: TestApi, ids: readonly string[], receiver: HttpsReceiver, hookPath: string, timeoutMs = 60_000): Promise<void> {
  const pending = new Set(ids);
  await waitFor(
    async () => {
      const { rows } = await api.deps.db.pool.query<{ public_id: string; status: number }>('SELECT public_id, status FROM tasks WHERE public_id = ANY($1)', [[...pending]]);
      for (const row of rows) if (row.status === 20) pending.delete(row.public_id);
      return pending.size === 0;
    },
    { timeoutMs, intervalMs: 200, what: `every task to complete (${pending.size} left)` },
  );
  const announced = () => new Set(receiver.at(hookPath).map((r) => (JSON.parse(r.body.toString()) as { public_id: string }).public_id));
  await waitFor(() => ids.every((id) => announced().has(id)), { timeoutMs, intervalMs: 200, what: 'every webhook to arrive' });
  for (const id of ids) expect({ id, ledger: await ledgerOf(api, id) }).toEqual({ id, ledger: [{ entry_type: 'charge', amount: expect.any(Number) }] });
}
