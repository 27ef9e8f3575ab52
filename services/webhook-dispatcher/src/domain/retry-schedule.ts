/**
 * Delay before the attempt after failed attempt `attempt` (1-based), measured from that attempt,
 * or null when the series is over: attempt 1 plus one retry per configured delay
 * (`WEBHOOK_RETRY_DELAYS_MS`, by default 1 min, 5 min, 30 min, 2 h, 6 h: six attempts in all).
 * Attempts past the schedule (manual resends) get no automatic retry.
 */
export function retryDelayAfter(attempt: number, delaysMs: readonly number[]): number | null {
  return attempt >= 1 && attempt <= delaysMs.length ? (delaysMs[attempt - 1] ?? null) : null;
}
