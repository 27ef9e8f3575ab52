// Webhook deliveries (`webhook_deliveries`, `webhook_attempts`) as the dispatcher reads and writes
// them, with what a webhook needs from `tasks` and `accounts` (the task's outcome, the account's
// encrypted secret) joined in the same statements. Typed statements on the pg pool (@taskapi/db).
// These are the dispatcher's hot statements: their text and names are fixed, and their plans are
// checked under a backlog (test/db/hot-statement-plans.test.ts).
import type { QueryConfig } from 'pg';
import { z } from 'zod';
import { execute, queryFirst, queryRows, statement, type SqlExecutor } from '@taskapi/db';

const deliveryState = z.enum(['pending', 'succeeded', 'failed']);

/** A delivery's state: pending until an attempt succeeds, or the retry schedule is over. */
export type DeliveryState = z.output<typeof deliveryState>;

/** What a webhook's request is built from: the delivery's address and its task's outcome. */
const requestFields = {
  id: z.string(),
  url: z.string(),
  /** The task status the delivery announces (20 or 30). */
  task_status: z.number(),
  public_id: z.string(),
  kind: z.string(),
  error_code: z.string().nullable(),
  /** Source text of the stored JSON (`json` columns keep it exactly). */
  payload: z.string().nullable(),
  result: z.string().nullable(),
  /** The task's `traceparent`: each attempt's span joins the task's trace. */
  trace_parent: z.string().nullable(),
};

/**
 * The claim's conditions on `webhook_deliveries d`: attempt `$2` is the next number of pending
 * delivery `$1`, and the previous attempt is recorded (not in flight). Every statement that claims
 * (`CLAIM_ATTEMPT_SQL`, `CLAIM_AND_LOAD`) uses exactly these.
 */
const CLAIM_CONDITIONS = `d.id = $1 AND d.attempt_count = $2 - 1 AND d.state = 'pending'
     AND NOT EXISTS (SELECT 1 FROM webhook_attempts WHERE delivery_id = $1 AND attempt_number = $2 - 1 AND in_flight)`;

/** The claimed number's attempt row, written "in flight" for the delivery claimed in CTE `d`; `startedAt` is its parameter. */
const insertClaimedAttempt = (startedAt: string) => `INSERT INTO webhook_attempts (delivery_id, attempt_number, started_at, duration_ms, in_flight)
  SELECT id, $2, ${startedAt}, 0, true FROM d`;

// One statement: the delivery's count moves to this number and the attempt's row is written "in
// flight", only if this is the next number of a pending delivery whose previous attempt is
// recorded. Of two dispatchers racing for a number, one gets it; the other sends nothing.
// Upgrading from dispatchers that predate the claim: they know nothing of in-flight rows (an old
// sweeper could schedule attempt N+1 while N is in flight), so stop the old dispatchers before
// the new ones start (docs/operations.md, *Upgrade notes*); rows they wrote default to recorded (in_flight = false).
const CLAIM_ATTEMPT_SQL = `
WITH d AS (
  UPDATE webhook_deliveries d
     SET attempt_count = $2
   WHERE ${CLAIM_CONDITIONS}
  RETURNING d.id
)
${insertClaimedAttempt('$3')}
RETURNING id`;

/**
 * Claims attempt number `attempt` of a delivery before its webhook is sent: its count moves to
 * `attempt` and the attempt's row is written in flight, started at `startedAt`. Once this commits,
 * the number belongs to one POST and is never sent again, whatever happens to the dispatcher.
 * A number is claimable only as the next number of a pending delivery whose previous attempt is
 * recorded: of two dispatchers racing for it one gets it, and no attempt starts while the one
 * before it is in flight.
 * @returns false when nothing was claimed: `attempt` is not the next number, the previous attempt
 *   is in flight, or the delivery is not pending (or unknown).
 */
export async function claimAttempt(db: SqlExecutor, deliveryId: string, attempt: number, startedAt: Date): Promise<boolean> {
  return (await execute(db, 'dispatcher-claim-attempt', CLAIM_ATTEMPT_SQL, [deliveryId, attempt, startedAt])) > 0;
}

// The claim of `CLAIM_ATTEMPT_SQL` (its conditions), made only while the account's secret is still
// the ciphertext the caller already decrypted — so a secret that cannot be decrypted never takes a
// number here either. It returns what the body needs.
const CLAIM_AND_LOAD = statement(
  'dispatcher-claim-and-load',
  `
WITH d AS (
  UPDATE webhook_deliveries d
     SET attempt_count = $2
    FROM accounts a
   WHERE ${CLAIM_CONDITIONS}
     AND a.id = d.account_id AND a.id = $3 AND a.webhook_secret_ciphertext = $4
  RETURNING d.id, d.url, d.task_status, d.task_id
), w AS (
  ${insertClaimedAttempt('$5')}
  RETURNING delivery_id
)
SELECT d.id, d.url, d.task_status,
       t.public_id, t.kind::text AS kind, t.error_code, t.payload::text AS payload, t.result::text AS result, t.trace_parent
  FROM d JOIN w ON w.delivery_id = d.id JOIN tasks t ON t.id = d.task_id`,
  z.object(requestFields),
);

/** A delivery claimed by `claimAndLoad`: what its request needs (the secret is the caller's). */
export type ClaimedDelivery = z.output<typeof CLAIM_AND_LOAD.row>;

/** The claim of `claimAttempt`, made only while account `accountId`'s secret is still `ciphertext`. */
export interface ClaimAndLoad {
  deliveryId: string;
  attempt: number;
  accountId: string;
  ciphertext: string;
  startedAt: Date;
}

/**
 * `claimAttempt` and the load of what the request needs, in one round trip, when the caller knows
 * the account and holds the plaintext of `ciphertext` (its cache of decrypted secrets): made only
 * while the delivery belongs to `accountId` and that account's secret is still `ciphertext`, so a
 * secret that cannot be decrypted never takes a number here either.
 * @returns null when nothing was claimed: not this number's turn, the delivery is done, the last
 *   attempt is in flight, or the secret was rotated since; the caller then takes the full path
 *   (load, decrypt, claim), which tells these apart.
 */
export function claimAndLoad(db: SqlExecutor, c: ClaimAndLoad): Promise<ClaimedDelivery | null> {
  return queryFirst(db, CLAIM_AND_LOAD, [c.deliveryId, c.attempt, c.accountId, c.ciphertext, c.startedAt]);
}

const LOAD_DELIVERY = statement(
  'dispatcher-load-delivery',
  `SELECT d.id, d.state::text AS state, d.attempt_count,
                  COALESCE((SELECT w.in_flight FROM webhook_attempts w
                             WHERE w.delivery_id = d.id AND w.attempt_number = d.attempt_count), false) AS last_attempt_in_flight,
                  (SELECT (extract(epoch FROM now() - w.started_at) * 1000)::float8 FROM webhook_attempts w
                    WHERE w.delivery_id = d.id AND w.attempt_number = d.attempt_count AND w.in_flight) AS last_attempt_claimed_ms_ago,
                  d.url, d.task_status,
                  t.public_id, t.kind::text AS kind, t.error_code, t.payload::text AS payload, t.result::text AS result, t.trace_parent,
                  a.id AS account_id, a.webhook_secret_ciphertext
             FROM webhook_deliveries d
             JOIN tasks t ON t.id = d.task_id
             JOIN accounts a ON a.id = d.account_id
            WHERE d.id = $1`,
  z.object({
    ...requestFields,
    state: deliveryState,
    /** Attempt numbers claimed so far (the last one may still be in flight). */
    attempt_count: z.number(),
    /** Whether attempt `attempt_count` was claimed and its result is not recorded yet. */
    last_attempt_in_flight: z.boolean(),
    /** With `last_attempt_in_flight`: milliseconds since that claim, by the database's clock. */
    last_attempt_claimed_ms_ago: z.number().nullable(),
    account_id: z.string(),
    webhook_secret_ciphertext: z.string(),
  }),
);

/** A delivery with what its webhook needs: the task's outcome and the account's encrypted secret. */
export type DeliveryToSend = z.output<typeof LOAD_DELIVERY.row>;

/** The delivery, its last attempt's claim, its task's outcome and its account's secret; null when unknown. */
export function loadDelivery(db: SqlExecutor, deliveryId: string): Promise<DeliveryToSend | null> {
  return queryFirst(db, LOAD_DELIVERY, [deliveryId]);
}

/** The result of one claimed attempt, and what it makes of the delivery. */
export interface AttemptRecord {
  deliveryId: string;
  attempt: number;
  durationMs: number;
  statusCode: number | null;
  error: string | null;
  responseExcerpt: string | null;
  /** The delivery's state after this attempt. */
  state: DeliveryState;
  /** With `pending`: when the next attempt is due, in milliseconds from now. */
  retryInMs: number | null;
  /** The trace the attempt was sent in; null or absent with tracing off. */
  traceId?: string | null;
}

// One statement: the claimed attempt row gets its result and the delivery its new state, together,
// and only while the row is still in flight — a second recording of the same attempt (a rerun of
// the job, a retry after a timeout that did commit) changes nothing.
const RECORD_ATTEMPT_SQL = `
WITH a AS (
  UPDATE webhook_attempts
     SET in_flight = false,
         duration_ms = $5,
         status_code = $6,
         error = $7,
         response_excerpt = $8,
         trace_id = $9
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

/**
 * How long one recording may wait for PostgreSQL before it counts as unreachable and is tried
 * again: without it, a connection that went silent (no reset) would hold the result for as long as
 * TCP takes to give up, and the result would not yet be kept in the job.
 */
export const RECORD_TIMEOUT_MS = 10_000;

/**
 * Writes the result of claimed attempt `r.attempt` and the delivery's new state, together, only
 * while that attempt is in flight and is the latest of a pending delivery: a second recording of
 * the same attempt (a rerun of the job, a retry after a timeout that did commit) changes nothing,
 * so an attempt is recorded exactly once.
 * @param timeoutMs how long to wait for PostgreSQL before the query fails (pg's `query_timeout`;
 *   the pool then drops the connection).
 * @returns false when nothing was written: recorded already, or never claimed (or not in flight).
 */
export async function recordAttempt(db: SqlExecutor, r: AttemptRecord, timeoutMs = RECORD_TIMEOUT_MS): Promise<boolean> {
  // `execute` with pg's per-query read timeout, which pg's typings (and so `execute`) omit.
  const query: QueryConfig & { query_timeout: number } = {
    name: 'dispatcher-record-attempt',
    text: RECORD_ATTEMPT_SQL,
    values: [r.deliveryId, r.attempt, r.state, r.retryInMs ?? 0, r.durationMs, r.statusCode, r.error, r.responseExcerpt, r.traceId ?? null],
    query_timeout: timeoutMs,
  };
  const { rowCount } = await db.query(query);
  return (rowCount ?? 0) > 0;
}

const OVERDUE_PAGE = statement(
  'dispatcher-sweep-deliveries',
  `SELECT d.id, d.account_id, d.attempt_count, d.next_attempt_at, COALESCE(w.in_flight, false) AS last_attempt_in_flight
               FROM webhook_deliveries d
               LEFT JOIN webhook_attempts w ON w.delivery_id = d.id AND w.attempt_number = d.attempt_count
              WHERE d.state = 'pending' AND d.next_attempt_at < now() - make_interval(secs => $1::float8 / 1000)
                AND ($2::timestamptz IS NULL OR (d.next_attempt_at, d.id) > ($2::timestamptz, $3::text))
              ORDER BY d.next_attempt_at, d.id LIMIT $4`,
  z.object({
    id: z.string(),
    account_id: z.string(),
    attempt_count: z.number(),
    /** Set exactly while a delivery is pending. */
    next_attempt_at: z.date(),
    /** Whether attempt `attempt_count` was claimed and its result is not recorded yet. */
    last_attempt_in_flight: z.boolean(),
  }),
);

/** A pending delivery whose next attempt is overdue. */
export type OverdueDelivery = z.output<typeof OVERDUE_PAGE.row>;

/**
 * One keyset page of pending deliveries due more than `graceMs` ago, by due time then id, starting
 * after `after` (the last row of the previous page), at most `limit` rows.
 */
export function overdueDeliveriesPage(db: SqlExecutor, graceMs: number, after: { due: Date; id: string } | null, limit: number): Promise<OverdueDelivery[]> {
  return queryRows(db, OVERDUE_PAGE, [graceMs, after?.due ?? null, after?.id ?? null, limit]);
}
