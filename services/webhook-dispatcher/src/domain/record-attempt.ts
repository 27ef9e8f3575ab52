import type { QueryConfig } from 'pg';
import type { Queryable } from '@taskapi/domain';

export interface AttemptRecord {
  deliveryId: string;
  attempt: number;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
  /** The delivery's state after this attempt. */
  state: 'pending' | 'succeeded' | 'failed';
  /** With `pending`: when the next attempt is due, in milliseconds from now. */
  retryInMs: number | null;
}

/**
 * How long one recording may wait for PostgreSQL before it counts as unreachable and is tried
 * again: without it, a connection that went silent (no reset) would hold the result for as long as
 * TCP takes to give up, and the result would not yet be kept in the job.
 */
export const RECORD_TIMEOUT_MS = 10_000;

// One statement: the claimed attempt row gets its result and the delivery its new state, together,
// and only while the row is still in flight — a second recording of the same attempt (a rerun of
// the job, a retry after a timeout that did commit) changes nothing.
const RECORD_SQL = `
WITH a AS (
  UPDATE webhook_attempts
     SET in_flight = false,
         duration_ms = $5,
         status_code = $6,
         error = $7,
         response_excerpt = $8
   WHERE delivery_id = $1 AND attempt_number = $2 AND in_flight
  RETURNING delivery_id
)
UPDATE webhook_deliveries d
   SET state = $3::webhook_delivery_state,
       next_attempt_at = CASE WHEN $3 = 'pending' THEN now() + make_interval(secs => $4::float8 / 1000) END,
       completed_at = CASE WHEN $3 = 'pending' THEN NULL ELSE now() END
  FROM a
 WHERE d.id = a.delivery_id AND d.attempt_count = $2 AND d.state = 'pending'
RETURNING d.id`;

/** Records the result of a claimed attempt; false when it was recorded already (or is not in flight). */
export async function recordAttempt(db: Queryable, r: AttemptRecord): Promise<boolean> {
  const query: QueryConfig & { query_timeout: number } = {
    name: 'dispatcher-record-attempt',
    text: RECORD_SQL,
    values: [r.deliveryId, r.attempt, r.state, r.retryInMs ?? 0, r.durationMs, r.statusCode, r.error, r.responseExcerpt],
    // pg's own per-query read timeout (its typings omit it): the pool drops the connection.
    query_timeout: RECORD_TIMEOUT_MS,
  };
  const { rowCount } = await db.query(query);
  return (rowCount ?? 0) > 0;
}
