/**
 * Delay before the attempt after failed attempt `attempt` (1-based), measured from that attempt,
 * or null when the series is over: attempt 1 plus one retry per configured delay
 * (`WEBHOOK_RETRY_DELAYS_MS`, by default 1 min, 5 min, 30 min, 2 h, 6 h: six attempts in all).
 * Attempts past the schedule (manual resends) get no automatic retry.
 */
export function retryDelayAfter(attempt: number, delaysMs: readonly number[]): number | null {
  return attempt >= 1 && attempt <= delaysMs.length ? (delaysMs[attempt - 1] ?? null) : null;
}

/** What an attempt's result makes of its delivery; `retryDelayMs` is measured from the attempt. */
export type StateAfterAttempt = { state: 'succeeded' | 'failed'; retryDelayMs: null } | { state: 'pending'; retryDelayMs: number };

/**
 * The delivery's state after attempt `attempt` ended with `error` (null: delivered): succeeded;
 * else pending with the schedule's next delay; else, once the schedule is over, failed.
 */
export function stateAfterAttempt(attempt: number, error: string | null, delaysMs: readonly number[]): StateAfterAttempt {
  if (error === null) return { state: 'succeeded', retryDelayMs: null };
  const retryDelayMs = retryDelayAfter(attempt, delaysMs);
  return retryDelayMs === null ? { state: 'failed', retryDelayMs: null } : { state: 'pending', retryDelayMs };
}

/**
 * Milliseconds from `now` until the retry due `retryDelayMs` after an attempt that finished at
 * `finishedAt` (both epoch milliseconds); 0 when it is due already. A retry is measured from its
 * attempt, not from when the attempt's recording finally got through.
 */
export function retryDueInMs(retryDelayMs: number, finishedAt: number, now: number): number {
  return Math.max(0, retryDelayMs - (now - finishedAt));
}
