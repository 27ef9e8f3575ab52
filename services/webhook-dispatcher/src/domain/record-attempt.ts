import type { Queryable } from '@taskapi/domain';

export interface AttemptRecord {
  deliveryId: string;
  attempt: number;
  startedAt: Date;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
  /** The delivery's state after this attempt. */
  state: 'pending' | 'succeeded' | 'failed';
  /** With `pending`: when the next attempt is due, in milliseconds from now. */
  retryInMs: number | null;
}

// One statement: the attempt row and the delivery's new state commit together, and only if this
// attempt is the next one of a pending delivery (a duplicate run of the same attempt records nothing).
const RECORD_SQL = `
WITH d AS (
  UPDATE webhook_deliveries
     SET attempt_count = $2,
         state = $3::webhook_delivery_state,
         next_attempt_at = CASE WHEN $3 = 'pending' THEN now() + make_interval(secs => $4::float8 / 1000) END,
         completed_at = CASE WHEN $3 = 'pending' THEN NULL ELSE now() END
   WHERE id = $1 AND attempt_count = $2 - 1 AND state = 'pending'
  RETURNING id
)
INSERT INTO webhook_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code, error, response_excerpt)
SELECT id, $2, $5, $6, $7, $8, $9 FROM d
RETURNING id`;

/** Records an attempt; false when it was already recorded (or the delivery is no longer pending). */
export async function recordAttempt(db: Queryable, r: AttemptRecord): Promise<boolean> {
  const { rowCount } = await db.query({
    name: 'dispatcher-record-attempt',
    text: RECORD_SQL,
    values: [r.deliveryId, r.attempt, r.state, r.retryInMs ?? 0, r.startedAt, r.durationMs, r.statusCode, r.error, r.responseExcerpt],
  });
  return (rowCount ?? 0) > 0;
}
