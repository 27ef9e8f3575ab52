import type { Queryable } from '@taskapi/domain';

/**
 * The claim's conditions on `webhook_deliveries d`: attempt `$2` is the next number of pending
 * delivery `$1`, and the previous attempt is recorded (not in flight). Every statement that claims
 * (this one, and `claim-and-load.ts`) uses exactly these.
 */
export const CLAIM_CONDITIONS = `d.id = $1 AND d.attempt_count = $2 - 1 AND d.state = 'pending'
     AND NOT EXISTS (SELECT 1 FROM webhook_attempts WHERE delivery_id = $1 AND attempt_number = $2 - 1 AND in_flight)`;

/** The claimed number's attempt row, written "in flight" for the delivery claimed in CTE `d`; `startedAt` is its parameter. */
export const insertClaimedAttempt = (startedAt: string) => `INSERT INTO webhook_attempts (delivery_id, attempt_number, started_at, duration_ms, in_flight)
  SELECT id, $2, ${startedAt}, 0, true FROM d`;

// One statement: the delivery's count moves to this number and the attempt's row is written "in
// flight", only if this is the next number of a pending delivery whose previous attempt is
// recorded. Of two dispatchers racing for a number, one gets it; the other sends nothing.
// Upgrading from dispatchers that predate the claim: they know nothing of in-flight rows (an old
// sweeper could schedule attempt N+1 while N is in flight), so stop the old dispatchers before
// the new ones start (docs/operations.md, *Upgrade notes*); rows they wrote default to recorded (in_flight = false).
const CLAIM_SQL = `
WITH d AS (
  UPDATE webhook_deliveries d
     SET attempt_count = $2
   WHERE ${CLAIM_CONDITIONS}
  RETURNING d.id
)
${insertClaimedAttempt('$3')}
RETURNING id`;

/**
 * Claims attempt number `attempt` of a delivery before its webhook is sent: once this commits, the
 * number belongs to one POST and is never sent again, whatever happens to the dispatcher.
 * @returns false when the number is not this caller's to send (taken, or the delivery is done).
 */
export async function claimAttempt(db: Queryable, deliveryId: string, attempt: number, startedAt: Date): Promise<boolean> {
  const { rowCount } = await db.query({
    name: 'dispatcher-claim-attempt',
    text: CLAIM_SQL,
    values: [deliveryId, attempt, startedAt],
  });
  return (rowCount ?? 0) > 0;
}
