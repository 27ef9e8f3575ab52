import { setTimeout as delay } from 'node:timers/promises';
import { isDatabaseUnavailable } from '@taskapi/db';

/** The work could not finish before the dispatcher stopped; what it owes is kept for the job's next run. */
export class StoppedWhileDatabaseUnavailableError extends Error {
  constructor(cause: unknown) {
    super('stopping while PostgreSQL is unreachable; the job runs again later', { cause });
    this.name = 'StoppedWhileDatabaseUnavailableError';
  }
}

export interface RetryWhileUnavailableOptions {
  /** Aborted when the dispatcher stops: waiting ends and the last error is thrown. */
  signal: AbortSignal;
  /** Called on every failure (of any kind) before it is retried or thrown. */
  onFailure(err: unknown, failures: number): void;
  /** First wait, doubled after every failure up to `maxDelayMs`. */
  baseDelayMs?: number;
  maxDelayMs?: number;
}

/**
 * Runs `work` until it succeeds, waiting with capped exponential backoff (and jitter, so that many
 * dispatchers do not all reconnect in step) while PostgreSQL is unavailable. Any other error is
 * thrown at once; so is the unavailability once `signal` is aborted.
 */
export async function retryWhileDatabaseUnavailable<T>(work: () => Promise<T>, opts: RetryWhileUnavailableOptions): Promise<T> {
  const base = opts.baseDelayMs ?? 250;
  const max = opts.maxDelayMs ?? 5_000;
  for (let failures = 1; ; failures++) {
    try {
      return await work();
    } catch (err) {
      opts.onFailure(err, failures);
      if (!isDatabaseUnavailable(err)) throw err;
      if (opts.signal.aborted) throw new StoppedWhileDatabaseUnavailableError(err);
      const wait = Math.min(max, base * 2 ** Math.min(failures - 1, 20));
      try {
        await delay(wait / 2 + Math.random() * (wait / 2), undefined, { signal: opts.signal });
      } catch {
        throw new StoppedWhileDatabaseUnavailableError(err);
      }
    }
  }
}
