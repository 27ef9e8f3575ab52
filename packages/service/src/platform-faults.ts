import { setTimeout as delay } from 'node:timers/promises';
import { isDatabaseUnavailable } from '@taskapi/db';
import { isRedisUnavailable } from './redis-client';

/**
 * A fault of the platform's own, not of the work: PostgreSQL or Redis unreachable, restarting,
 * switching primaries, or a standby (or demoted primary) refusing a write. Waiting fixes it; a
 * task never fails for it (docs/high-availability.md, "Faults the platform owns").
 */
export function isPlatformFault(err: unknown): boolean {
  return isDatabaseUnavailable(err) || isRedisUnavailable(err);
}

/** The work could not finish before `signal` aborted (a process stopping) while a dependency was unavailable. */
export class StoppedWhileUnavailableError extends Error {
  constructor(cause: unknown) {
    super('stopping while a dependency is unavailable; the work is left for the next run or the sweeper', { cause });
    this.name = 'StoppedWhileUnavailableError';
  }
}

export interface RetryWhileUnavailableOptions {
  /** Aborted when the process stops: waiting ends and StoppedWhileUnavailableError is thrown. */
  signal: AbortSignal;
  /** Which errors are worth waiting out (default: `isPlatformFault`). */
  unavailable?: (err: unknown) => boolean;
  /** Called on every failure (of any kind) before it is retried or thrown. */
  onFailure?: (err: unknown, failures: number) => void;
  /** First wait, doubled after every failure up to `maxDelayMs`. */
  baseDelayMs?: number;
  maxDelayMs?: number;
}

/**
 * Runs `work` until it succeeds, waiting with capped exponential backoff (and jitter, so that many
 * processes do not all reconnect in step) while the error says a dependency is unavailable. Any
 * other error is thrown at once; so is the unavailability once `signal` is aborted.
 */
export async function retryWhileUnavailable<T>(work: () => Promise<T>, opts: RetryWhileUnavailableOptions): Promise<T> {
  const unavailable = opts.unavailable ?? isPlatformFault;
  const base = opts.baseDelayMs ?? 250;
  const max = opts.maxDelayMs ?? 5_000;
  for (let failures = 1; ; failures++) {
    try {
      return await work();
    } catch (err) {
      opts.onFailure?.(err, failures);
      if (!unavailable(err)) throw err;
      if (opts.signal.aborted) throw new StoppedWhileUnavailableError(err);
      const wait = Math.min(max, base * 2 ** Math.min(failures - 1, 20));
      try {
        await delay(wait / 2 + Math.random() * (wait / 2), undefined, { signal: opts.signal });
      } catch {
        throw new StoppedWhileUnavailableError(err);
      }
    }
  }
}
