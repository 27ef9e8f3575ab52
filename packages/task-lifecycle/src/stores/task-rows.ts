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

const HAND_BACK_SQL = `
UPDATE tasks
   SET status = 0,
       attempts = GREATEST(attempts - 1, 0),
       started_at = CASE WHEN attempts <= 1 THEN NULL ELSE started_at END
 WHERE public_id = $1 AND status = 10 AND attempts = $2`;

const REQUEUE_FOR_RETRY_SQL = `
UPDATE tasks SET status = 0
 WHERE public_id = $1 AND status = 10 AND attempts = $2`;

const STATUS = statement('worker-task-status', 'SELECT status FROM tasks WHERE public_id = $1', z.object({ status: z.number() }));

const PENDING_PAGE = statement(
  'worker-sweep-tasks',
  `SELECT id::text AS id, public_id, account_id, created_at FROM tasks
    WHERE finished_at IS NULL AND status IN (0, 10) AND created_at < now() - make_interval(secs => $2::float8 / 1000)
      AND kind::text = $1
      AND ($3::timestamptz IS NULL OR (created_at, id) > ($3::timestamptz, $4::bigint))
    ORDER BY created_at, id LIMIT $5`,
  z.object({ id: z.string(), public_id: z.string(), account_id: z.string(), created_at: z.date() }),
);
export type PendingTaskRow = z.output<typeof PENDING_PAGE.row>;

const STILL_PENDING = statement(
  'worker-sweep-in-service',
  'SELECT public_id FROM tasks WHERE public_id = ANY($1::text[]) AND status IN (0, 10)',
  z.object({ public_id: z.string() }),
);

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
  async handBack(publicId: string, attempts: number): Promise<boolean> {
    return (await execute(this.db, 'worker-hand-back-task', HAND_BACK_SQL, [publicId, attempts])) === 1;
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

  /** Which of these tasks are still queued or processing. */
  async stillPending(publicIds: readonly string[]): Promise<Set<string>> {
    return new Set((await queryRows(this.db, STILL_PENDING, [publicIds])).map((r) => r.public_id));
  }
}
