// PostgreSQL, the first store every transition writes (docs/architecture.md, "A task's life"): the
// task row, the credit ledger and the webhook outbox. The statements a transition commits, typed,
// on the pg pool; nothing else in the codebase changes a task's status.
import { execute, queryFirst, queryRows, statement, type SqlExecutor } from '@taskapi/db';
import { TaskStatus, type TaskErrorCode } from '@taskapi/domain';
import { TASK_KINDS, type TaskKind } from '@taskapi/task-kinds';
import { z } from 'zod';

/**
 * A terminal transition. `progress` (failed, cancelled): the last value the run reported, kept as
 * the task's; a completed task's is 1.
 */
export type FinishTaskInput =
  | { status: typeof TaskStatus.completed; result: unknown; files?: unknown[] }
  /** `errorMessage`: a sentence the task's owner can act on (never a stack or a secret); stored as given. */
  | { status: typeof TaskStatus.failed; errorCode: TaskErrorCode; errorMessage?: string; progress?: number | null }
  | { status: typeof TaskStatus.cancelled; progress?: number | null };

const FinishedTaskRow = z.object({
  id: z.string(),
  public_id: z.string(),
  account_id: z.string(),
  kind: z.string(),
  status: z.number(),
  /** Creation and terminal transition, both by the database clock (`taskapi_task_e2e_seconds`). */
  created_at: z.date(),
  finished_at: z.date(),
  /** Credits returned by this transition (0 when none). */
  refunded: z.number(),
  /** The webhook outbox row written by this transition, if any. */
  delivery_id: z.string().nullable(),
});
export type FinishedTask = z.output<typeof FinishedTaskRow>;

// One statement, so one implicit transaction and one round trip:
//  - the status change only happens from a non-terminal state (terminal at most once);
//  - failed and cancelled tasks are refunded through a ledger row that is unique per task
//    (ON CONFLICT DO NOTHING), and the balance moves only when that row was inserted;
//  - a refund lowers the spend of the task's key on the UTC day of its charge (the day the task was
//    created: spend limits, docs/api.md), after the balance (the order create_tasks locks them in);
//  - completed and failed tasks with a callback_url get their webhook delivery row (outbox).
const FINISH_TASK = statement(
  'finish-task',
  `
WITH t AS (
  UPDATE tasks
     SET status = $3,
         error_code = $4,
         error_message = $8,
         result = $5::json,
         files = COALESCE($6::jsonb, files),
         progress = $9::real,
         finished_at = now()
   WHERE public_id = $1
     AND ($2::text IS NULL OR account_id = $2)
     AND status IN (0, 10)
  RETURNING id, public_id, account_id, grant_id, api_key_id, cost, callback_url, status, kind, created_at, finished_at
),
refund AS (
  INSERT INTO credit_ledger (account_id, grant_id, task_id, entry_type, amount)
  SELECT account_id, grant_id, id, 'refund', cost FROM t WHERE t.status IN (30, 40) AND t.cost > 0
  ON CONFLICT (task_id, entry_type) DO NOTHING
  RETURNING account_id, grant_id, amount
),
paid AS (
  UPDATE accounts a SET paid_balance = a.paid_balance + r.amount
    FROM refund r WHERE r.grant_id IS NULL AND a.id = r.account_id
  RETURNING a.id
),
trial AS (
  UPDATE trial_grants g SET quota_remaining = g.quota_remaining + r.amount
    FROM refund r WHERE g.id = r.grant_id
  RETURNING g.id
),
spend AS (
  UPDATE api_key_spend s SET spent = GREATEST(s.spent - r.amount, 0)
    FROM refund r, t JOIN api_keys k ON k.id = t.api_key_id
   WHERE s.key_id = COALESCE(k.spend_key_id, k.id)
     AND s.day = (t.created_at AT TIME ZONE 'UTC')::date
     AND EXISTS (SELECT 1 FROM paid UNION ALL SELECT 1 FROM trial)
  RETURNING s.key_id
),
delivery AS (
  INSERT INTO webhook_deliveries (id, task_id, account_id, url, task_status, next_attempt_at)
  SELECT $7, id, account_id, callback_url, status, now() FROM t
   WHERE t.status IN (20, 30) AND t.callback_url IS NOT NULL
  RETURNING id
)
SELECT t.id, t.public_id, t.account_id, t.kind::text AS kind, t.status, t.created_at, t.finished_at,
       COALESCE((SELECT amount FROM refund), 0)::int AS refunded,
       (SELECT id FROM delivery) AS delivery_id
  FROM t`,
  FinishedTaskRow,
);

/**
 * Moves a task to a terminal state exactly once, refunding (failed, cancelled) and writing the
 * webhook outbox row (completed, failed with a callback_url) in the same statement.
 * Returns null when the task is unknown (for `accountId`) or already terminal.
 *
 * @param deliveryId id for the outbox row, used only when one is written (`whd_...`).
 */
function finishTask(db: SqlExecutor, publicId: string, accountId: string | null, input: FinishTaskInput, deliveryId: string): Promise<FinishedTask | null> {
  return queryFirst(db, FINISH_TASK, [
    publicId,
    accountId,
    input.status,
    input.status === TaskStatus.failed ? input.errorCode : null,
    input.status === TaskStatus.completed ? JSON.stringify(input.result ?? null) : null,
    input.status === TaskStatus.completed && input.files ? JSON.stringify(input.files) : null,
    deliveryId,
    input.status === TaskStatus.failed ? (input.errorMessage ?? null) : null,
    input.status === TaskStatus.completed ? 1 : (input.progress ?? null),
  ]);
}


// A claim from 0 starts an attempt; a claim from 10 is the re-run of one its worker never ended
// (it died, or lost its job's lock to a Redis outage): the same attempt goes on, so a crash or an
// outage spends none (a task that kills its worker twice still fails: BullMQ's stalled count).
// Only the engine's own transient failures spend attempts: the retry transition puts the task back
// to 0 with its attempt kept, so its next run's claim starts the next attempt.

/** A task claimed for a run (status 10). */
export interface ClaimedTask {
  id: string;
  public_id: string;
  account_id: string;
  kind: TaskKind;
  created_at: Date;
  params: Record<string, unknown>;
  /** This run's attempt: 1 for the first (a hand-back gives its run's back; a re-run after a crash continues it). */
  attempts: number;
  /** The creation request's `traceparent` (docs/architecture.md, "Tracing"); null when tracing was off. */
  traceParent: string | null;
  /**
   * An uploaded `image_base64`, when there is one: its bytes from `task_inputs.data` (rows written
   * before the file store held inputs), or `inStore` (read it from the store at `inputKey`).
   */
  upload: { contentType: string; data: Buffer } | { contentType: string; inStore: true } | null;
}

const CLAIM = statement(
  'worker-start-task',
  `
WITH t AS (
  UPDATE tasks
     SET status = 10, started_at = COALESCE(started_at, now()), attempts = attempts + CASE WHEN status = 0 THEN 1 ELSE 0 END
   WHERE public_id = $1 AND status IN (0, 10)
     AND (status = 10 OR started_at IS NOT NULL OR expires_at IS NULL OR expires_at > now())
  RETURNING id, public_id, account_id, kind, created_at, input, attempts, trace_parent
)
SELECT t.id::text AS id, t.public_id, t.account_id, t.kind::text AS kind, t.created_at, t.input::text AS input, t.attempts, t.trace_parent,
       i.content_type AS upload_type, i.data AS upload_data, i.in_store AS upload_in_store
  FROM t LEFT JOIN task_inputs i ON i.task_id = t.id`,
  z.object({
    id: z.string(),
    public_id: z.string(),
    account_id: z.string(),
    kind: z.enum(TASK_KINDS),
    created_at: z.date(),
    input: z.string(),
    attempts: z.number(),
    trace_parent: z.string().nullable(),
    upload_type: z.string().nullable(),
    upload_data: z.instanceof(Buffer).nullable(),
    upload_in_store: z.boolean().nullable(),
  }),
);

// `started_at` stays: a task that has started is never expired (docs/api.md, "Order, lifetime and fairness inside an account").
// $3: the run ended busy (its wait on the model goes on: `model_busy_since` kept); otherwise the
// model took the run, which ends the present wait.
const HAND_BACK_SQL = `
UPDATE tasks
   SET status = 0,
       attempts = GREATEST(attempts - 1, 0),
       model_busy_since = CASE WHEN $3::boolean THEN model_busy_since END
 WHERE public_id = $1 AND status = 10 AND attempts = $2`;

// The model took the run (it failed there): the present wait on a busy model is over.
const REQUEUE_FOR_RETRY_SQL = `
UPDATE tasks SET status = 0, model_busy_since = NULL
 WHERE public_id = $1 AND status = 10 AND attempts = $2`;

// A busy model server refused the run: the time since the present wait began joins the task's busy
// time, and the wait goes on from now (the first refusal of a wait adds nothing and starts it).
const RECORD_BUSY = statement(
  'worker-record-model-busy',
  `UPDATE tasks
      SET model_busy_ms = model_busy_ms + COALESCE(GREATEST(0, (extract(epoch FROM now() - model_busy_since) * 1000)::bigint), 0),
          model_busy_since = now()
    WHERE public_id = $1 AND status = 10 AND attempts = $2
   RETURNING model_busy_ms::float8 AS busy_ms`,
  z.object({ busy_ms: z.number() }),
);

const STATUS = statement('worker-task-status', 'SELECT status FROM tasks WHERE public_id = $1', z.object({ status: z.number() }));

// A task that has started once never expires: its deadline is left out of its restored record.
const PENDING_PAGE = statement(
  'worker-sweep-tasks',
  `SELECT id::text AS id, public_id, account_id, created_at, priority, CASE WHEN started_at IS NULL THEN expires_at END AS expires_at, fairness_key FROM tasks
    WHERE finished_at IS NULL AND status IN (0, 10) AND created_at < now() - make_interval(secs => $2::float8 / 1000)
      AND kind::text = $1
      AND ($3::timestamptz IS NULL OR (created_at, id) > ($3::timestamptz, $4::bigint))
    ORDER BY created_at, id LIMIT $5`,
  z.object({
    id: z.string(),
    public_id: z.string(),
    account_id: z.string(),
    created_at: z.date(),
    priority: z.number().nullable(),
    expires_at: z.date().nullable(),
    fairness_key: z.string().nullable(),
  }),
);
export type PendingTaskRow = z.output<typeof PENDING_PAGE.row>;

const STILL_PENDING = statement(
  'worker-sweep-in-service',
  'SELECT public_id FROM tasks WHERE public_id = ANY($1::text[]) AND status IN (0, 10)',
  z.object({ public_id: z.string() }),
);

// Ending many tasks in one statement (bulk cancel, expiry): each row as `finishTask` would, the
// refunds summed per payer and per key and day before they are applied (one row update each),
// the balances before the spend (the order create_tasks locks them in, so neither waits for the
// other in a cycle).
// A finished task's row without a webhook delivery (these transitions send none).
const ENDED_ROW = FinishedTaskRow.omit({ delivery_id: true });
export type EndedTask = z.output<typeof ENDED_ROW>;

const REFUNDS_OF_ENDED = `
refund AS (
  INSERT INTO credit_ledger (account_id, grant_id, task_id, entry_type, amount)
  SELECT account_id, grant_id, id, 'refund', cost FROM t WHERE t.cost > 0
  ON CONFLICT (task_id, entry_type) DO NOTHING
  RETURNING task_id, account_id, grant_id, amount
),
paid AS (
  UPDATE accounts a SET paid_balance = a.paid_balance + r.total
    FROM (SELECT account_id, sum(amount)::int AS total FROM refund WHERE grant_id IS NULL GROUP BY account_id) r
   WHERE a.id = r.account_id
  RETURNING a.id
),
trial AS (
  UPDATE trial_grants g SET quota_remaining = g.quota_remaining + r.total
    FROM (SELECT grant_id, sum(amount)::int AS total FROM refund WHERE grant_id IS NOT NULL GROUP BY grant_id) r
   WHERE g.id = r.grant_id
  RETURNING g.id
),
spend AS (
  UPDATE api_key_spend s SET spent = GREATEST(s.spent - r.total, 0)
    FROM (SELECT COALESCE(k.spend_key_id, k.id) AS key_id, (t.created_at AT TIME ZONE 'UTC')::date AS day, sum(f.amount) AS total
            FROM refund f JOIN t ON t.id = f.task_id JOIN api_keys k ON k.id = t.api_key_id
           GROUP BY 1, 2) r
   WHERE s.key_id = r.key_id AND s.day = r.day
     -- After the balances (the order create_tasks locks them in): reading them makes this wait.
     AND EXISTS (SELECT 1 FROM paid UNION ALL SELECT 1 FROM trial)
  RETURNING s.key_id
)
SELECT t.id::text AS id, t.public_id, t.account_id, t.kind::text AS kind, t.status, t.created_at, t.finished_at,
       COALESCE(f.amount, 0)::int AS refunded
  FROM t LEFT JOIN refund f ON f.task_id = t.id
 ORDER BY t.id`;

// Queued, never started, past its deadline: status 40 with `expired`, refunded; at most $1 a call,
// soonest first. SKIP LOCKED: a task being claimed or cancelled right now is that one's. One replica
// at a time (the transaction's advisory lock; the others find nothing this time round): two sweeps
// refunding tasks of the same accounts in different orders could deadlock on the balances.
const EXPIRY_LOCK = 0x7a5e_0001;
const EXPIRE_DUE = statement(
  'lifecycle-expire-due',
  `
WITH gate AS MATERIALIZED (SELECT pg_try_advisory_xact_lock(${EXPIRY_LOCK}) AS mine),
due AS (
  SELECT id FROM tasks, gate
   WHERE gate.mine AND status = 0 AND expires_at IS NOT NULL AND expires_at <= now() AND started_at IS NULL
   ORDER BY expires_at
   LIMIT $1
   FOR UPDATE SKIP LOCKED
),
t AS (
  UPDATE tasks SET status = 40, error_code = 'expired', error_message = $2, finished_at = now()
    FROM due
   WHERE tasks.id = due.id AND tasks.status = 0 AND tasks.started_at IS NULL
  RETURNING tasks.id, tasks.public_id, tasks.account_id, tasks.grant_id, tasks.api_key_id, tasks.cost, tasks.status, tasks.kind, tasks.created_at, tasks.finished_at
),
${REFUNDS_OF_ENDED}`,
  ENDED_ROW,
);

// The account's tasks of `ids` still in one of the statuses $4 (queued or processing; a filter's own
// status): status 40, refunded, each keeping the progress given for it (the running ones': what
// they had reached). The tasks are found by their
// public ids alone and only then checked for account and status: with the account and status in
// the same scan, stale statistics (a burst since the last ANALYZE) let the planner walk the
// account's whole backlog through tasks_account_id_status_id_idx (test/db/hot-statement-plans.test.ts).
// The UPDATE re-checks the status under the row lock.
const CANCEL_MANY = statement(
  'lifecycle-cancel-many',
  `
WITH found AS MATERIALIZED (
  SELECT tasks.id, tasks.account_id, tasks.status, p.progress
    FROM unnest($2::text[], $3::real[]) AS p(public_id, progress)
    JOIN tasks ON tasks.public_id = p.public_id
),
picked AS (
  SELECT id, progress FROM found WHERE account_id = $1 AND status = ANY($4::smallint[])
),
t AS (
  UPDATE tasks SET status = 40, finished_at = now(), progress = picked.progress
    FROM picked
   WHERE tasks.id = picked.id AND tasks.status = ANY($4::smallint[])
  RETURNING tasks.id, tasks.public_id, tasks.account_id, tasks.grant_id, tasks.api_key_id, tasks.cost, tasks.status, tasks.kind, tasks.created_at, tasks.finished_at
),
${REFUNDS_OF_ENDED}`,
  ENDED_ROW,
);

const CANCEL_CANDIDATES = statement(
  'lifecycle-cancel-candidates',
  `SELECT id::text AS id, public_id, status FROM tasks
    WHERE account_id = $1 AND status IN (0, 10)
      AND ($2::task_kind IS NULL OR kind = $2::task_kind)
      AND ($3::int IS NULL OR status = $3::int)
      AND ($4::text IS NULL OR fairness_key = $4::text)
      AND ($5::bigint IS NULL OR id > $5::bigint)
      AND id <= $7::bigint
    ORDER BY tasks.id LIMIT $6`,
  z.object({ id: z.string(), public_id: z.string(), status: z.number() }),
);

// The newest task id now: a bulk cancel by filter stops there (tasks created while it runs are not its).
const NEWEST_TASK_ID = statement('lifecycle-newest-task-id', 'SELECT COALESCE(max(id), 0)::text AS id FROM tasks', z.object({ id: z.string() }));

const STATUSES_OF = statement(
  'lifecycle-statuses-of',
  // By public id alone, then the account (as CANCEL_MANY, for the same reason).
  `WITH found AS MATERIALIZED (
     SELECT tasks.public_id, tasks.account_id, tasks.status FROM unnest($2::text[]) AS p(public_id) JOIN tasks ON tasks.public_id = p.public_id
   )
   SELECT public_id, status FROM found WHERE account_id = $1`,
  z.object({ public_id: z.string(), status: z.number() }),
);

/** What a bulk cancel's filter matches: every non-terminal task of the account, narrowed by these. */
export interface CancelFilter {
  kind?: TaskKind | undefined;
  status?: 0 | 10 | undefined;
  fairnessKey?: string | undefined;
}

/** The task statements of the lifecycle, on one pool (or a test's failing stand-in for it). */
export class TaskRows {
  constructor(readonly db: SqlExecutor) {}

  /**
   * Marks a queued (or previously interrupted) task as processing and loads its input. Null when
   * the task is unknown or already terminal (cancelled, or finished by another run): skip it.
   */
  async claim(publicId: string): Promise<ClaimedTask | null> {
    const row = await queryFirst(this.db, CLAIM, [publicId]);
    if (!row) return null;
    return {
      id: row.id,
      public_id: row.public_id,
      account_id: row.account_id,
      kind: row.kind,
      created_at: row.created_at,
      params: JSON.parse(row.input) as Record<string, unknown>,
      attempts: row.attempts,
      traceParent: row.trace_parent,
      upload: !row.upload_type
        ? null
        : row.upload_in_store
          ? { contentType: row.upload_type, inStore: true }
          : row.upload_data
            ? { contentType: row.upload_type, data: row.upload_data }
            : null,
    };
  }

  /**
   * Undoes `claim` for a run handed back unfinished: the task is queued again and the attempt it
   * used is given back. A task that meanwhile reached a terminal status (cancelled), or that
   * another run claimed since (this run lost its job lock), is left alone. Returns whether the
   * task was handed back.
   */
  async handBack(publicId: string, attempts: number, busy = false): Promise<boolean> {
    return (await execute(this.db, 'worker-hand-back-task', HAND_BACK_SQL, [publicId, attempts, busy])) === 1;
  }

  /**
   * A busy model server refused this run: adds the present wait to the task's busy time and returns
   * the milliseconds it has waited in all (null when the task moved on or another run claimed it).
   */
  async recordBusy(publicId: string, attempts: number): Promise<number | null> {
    return (await queryFirst(this.db, RECORD_BUSY, [publicId, attempts]))?.busy_ms ?? null;
  }

  /**
   * A transient engine failure spent this run's attempt: the task is queued again (status 0,
   * `started_at` kept) until its retry runs, and that run's claim starts the next attempt. Left
   * alone when the task moved on (a cancel) or another run claimed it since. Returns whether it
   * was queued again.
   */
  async requeueForRetry(publicId: string, attempts: number): Promise<boolean> {
    return (await execute(this.db, 'worker-requeue-for-retry', REQUEUE_FOR_RETRY_SQL, [publicId, attempts])) === 1;
  }

  /** The terminal transition (see `finishTask`). */
  finish(publicId: string, accountId: string | null, input: FinishTaskInput, deliveryId: string): Promise<FinishedTask | null> {
    return finishTask(this.db, publicId, accountId, input, deliveryId);
  }

  /** The current status of a task, or null when it does not exist. */
  async status(publicId: string): Promise<number | null> {
    return (await queryFirst(this.db, STATUS, [publicId]))?.status ?? null;
  }

  /** One keyset page of a kind's tasks still queued or processing, created more than `graceMs` ago, oldest first. */
  pendingPage(kind: TaskKind, graceMs: number, after: { createdAt: Date; id: string } | null, limit: number): Promise<PendingTaskRow[]> {
    return queryRows(this.db, PENDING_PAGE, [kind, graceMs, after?.createdAt ?? null, after?.id ?? null, limit]);
  }

  /**
   * Expires up to `limit` queued tasks past their deadline that never started (status 40,
   * `error_code` `expired` with `message`, refunded in full). Soonest first.
   */
  expireDue(limit: number, message: string): Promise<EndedTask[]> {
    return queryRows(this.db, EXPIRE_DUE, [limit, message]);
  }

  /**
   * Cancels those of the account's tasks `publicIds` still in one of `statuses` (queued or
   * processing by default; status 40, refunded in full, no webhook), each keeping `progress[i]`
   * (null: none). Returns the ones it cancelled.
   */
  cancelMany(accountId: string, publicIds: readonly string[], progress: ReadonlyArray<number | null>, statuses: readonly number[] = [0, 10]): Promise<EndedTask[]> {
    return queryRows(this.db, CANCEL_MANY, [accountId, publicIds, progress, statuses]);
  }

  /** The newest task's id (a bulk cancel by filter's upper bound). */
  async newestTaskId(): Promise<string> {
    return (await queryRows(this.db, NEWEST_TASK_ID, []))[0]!.id;
  }

  /**
   * The next `limit` of the account's non-terminal tasks matching `filter`, after `afterId` and up
   * to `upToId`, oldest first.
   */
  cancelCandidates(accountId: string, filter: CancelFilter, afterId: string | null, limit: number, upToId: string): Promise<Array<{ id: string; public_id: string; status: number }>> {
    return queryRows(this.db, CANCEL_CANDIDATES, [accountId, filter.kind ?? null, filter.status ?? null, filter.fairnessKey ?? null, afterId, limit, upToId]);
  }

  /** The statuses of those of `publicIds` that are the account's (unknown ones left out). */
  async statusesOf(accountId: string, publicIds: readonly string[]): Promise<Map<string, number>> {
    return new Map((await queryRows(this.db, STATUSES_OF, [accountId, publicIds])).map((r) => [r.public_id, r.status]));
  }

  /** Which of these tasks are still queued or processing. */
  async stillPending(publicIds: readonly string[]): Promise<Set<string>> {
    return new Set((await queryRows(this.db, STILL_PENDING, [publicIds])).map((r) => r.public_id));
  }
}
