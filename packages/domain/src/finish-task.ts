import { queryFirst, statement, type SqlExecutor } from '@taskapi/db';
import { z } from 'zod';
import { TaskStatus, type TaskErrorCode } from './task-rules';
import { recordTaskStatus, type MarkerRedis } from './task-status-marker';

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
export async function finishTask(
  db: SqlExecutor,
  publicId: string,
  accountId: string | null,
  input: FinishTaskInput,
  deliveryId: string,
): Promise<FinishedTask | null> {
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

/**
 * `finishTask`, then the status marker that API replicas validate their cached task rows against.
 * Every caller outside tests should use this.
 */
export async function finishTaskAndRecord(
  db: SqlExecutor,
  redis: MarkerRedis,
  publicId: string,
  accountId: string | null,
  input: FinishTaskInput,
  deliveryId: string,
): Promise<FinishedTask | null> {
  const finished = await finishTask(db, publicId, accountId, input, deliveryId);
  if (finished) await recordTaskStatus(redis, finished.account_id, finished.public_id, finished.status);
  return finished;
}
