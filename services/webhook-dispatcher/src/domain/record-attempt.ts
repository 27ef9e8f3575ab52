import type { SqlExecutor } from '@taskapi/db';
import { recordAttemptResult, type AttemptRecord } from '../repositories/deliveries';

export type { AttemptRecord } from '../repositories/deliveries';

/**
 * How long one recording may wait for PostgreSQL before it counts as unreachable and is tried
 * again: without it, a connection that went silent (no reset) would hold the result for as long as
 * TCP takes to give up, and the result would not yet be kept in the job.
 */
export const RECORD_TIMEOUT_MS = 10_000;

/**
 * Records the result of a claimed attempt and the delivery's new state, together, only while the
 * attempt is in flight: a second recording of the same attempt (a rerun of the job, a retry after
 * a timeout that did commit) changes nothing, so an attempt is recorded exactly once.
 * @returns false when it was recorded already (or is not in flight).
 */
export function recordAttempt(db: SqlExecutor, r: AttemptRecord): Promise<boolean> {
  return recordAttemptResult(db, r, RECORD_TIMEOUT_MS);
}
