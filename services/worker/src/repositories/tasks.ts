// Tasks (`tasks`, `task_inputs`) as the worker reads and writes them: claiming a task for a run and
// handing it back, the sweeper's pages, the retention job's batches. Typed statements on the pg
// pool (@taskapi/db); the terminal transition itself is shared with the API (packages/domain).
import { z } from 'zod';
import { execute, queryFirst, queryRows, statement, type SqlExecutor } from '@taskapi/db';
import { TaskStatus } from '@taskapi/domain';
import { TASK_KINDS, type TaskKind } from '@taskapi/task-kinds';

/** A task claimed for processing (status 10). */
export interface ClaimedTask {
  id: string;
  public_id: string;
  account_id: string;
  kind: TaskKind;
  created_at: Date;
  params: Record<string, unknown>;
  /** How many times processing started, this run included. */
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
     SET status = 10, started_at = COALESCE(started_at, now()), attempts = attempts + 1
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

/**
 * Marks a queued (or previously interrupted) task as processing and loads its input. Returns null
 * when the task is unknown or already terminal (cancelled, or finished by another run): skip it.
 */
export async function claimTask(db: SqlExecutor, publicId: string): Promise<ClaimedTask | null> {
  const row = await queryFirst(db, CLAIM, [publicId]);
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

const HAND_BACK_SQL = `
UPDATE tasks
   SET status = 0,
       attempts = GREATEST(attempts - 1, 0),
       started_at = CASE WHEN attempts <= 1 THEN NULL ELSE started_at END
 WHERE public_id = $1 AND status = 10 AND attempts = $2`;

/**
 * Undoes `claimTask` for a run that is handed back unfinished (the worker is shutting down): the
 * task is queued again and the attempt it used is given back. A task that meanwhile reached a
 * terminal status (cancelled), or that another run claimed since (this run lost its job lock), is
 * left alone. Returns whether the task was handed back.
 *
 * The Redis status marker keeps "processing" (it only moves forward); API replicas then read the
 * row from PostgreSQL until the next run claims it, moments later.
 */
export async function handBackTask(db: SqlExecutor, task: Pick<ClaimedTask, 'public_id' | 'attempts'>): Promise<boolean> {
  return (await execute(db, 'worker-hand-back-task', HAND_BACK_SQL, [task.public_id, task.attempts])) === 1;
}

const STATUS = statement('worker-task-status', 'SELECT status FROM tasks WHERE public_id = $1', z.object({ status: z.number() }));

/** The current status of a task, or null when it does not exist. */
export async function taskStatus(db: SqlExecutor, publicId: string): Promise<number | null> {
  return (await queryFirst(db, STATUS, [publicId]))?.status ?? null;
}

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

/** One keyset page of a kind's tasks still queued or processing, created more than `graceMs` ago, oldest first. */
export function pendingTasksPage(
  db: SqlExecutor,
  kind: TaskKind,
  graceMs: number,
  after: { createdAt: Date; id: string } | null,
  limit: number,
): Promise<PendingTaskRow[]> {
  return queryRows(db, PENDING_PAGE, [kind, graceMs, after?.createdAt ?? null, after?.id ?? null, limit]);
}

const STILL_PENDING = statement(
  'worker-sweep-in-service',
  'SELECT public_id FROM tasks WHERE public_id = ANY($1::text[]) AND status IN (0, 10)',
  z.object({ public_id: z.string() }),
);

/** Which of these tasks are still queued or processing. */
export async function stillPending(db: SqlExecutor, publicIds: readonly string[]): Promise<Set<string>> {
  return new Set((await queryRows(db, STILL_PENDING, [publicIds])).map((r) => r.public_id));
}

// Marked rows leave the filter (and the partial index tasks_retention_idx, whose predicate the
// status list repeats literally so the planner can use it), so no cursor is needed.
const EXPIRING = statement(
  'worker-expiring-tasks',
  `SELECT t.id::text AS id, t.public_id, t.files, EXISTS (SELECT 1 FROM task_inputs i WHERE i.task_id = t.id) AS has_input
     FROM tasks t
    WHERE t.status IN (${TaskStatus.completed}, ${TaskStatus.failed}, ${TaskStatus.cancelled}) AND t.files_expired_at IS NULL
      AND t.finished_at < now() - make_interval(days => $1::int)
      AND NOT (t.id = ANY($3::bigint[]))
    ORDER BY t.finished_at LIMIT $2`,
  z.object({ id: z.string(), public_id: z.string(), files: z.array(z.object({ name: z.string() }).loose()), has_input: z.boolean() }),
);

export type ExpiringTaskRow = z.output<typeof EXPIRING.row>;

/** Terminal tasks whose files are older than `retentionDays`, oldest first, passing over `skipIds`. */
export function expiringTasks(db: SqlExecutor, retentionDays: number, limit: number, skipIds: readonly string[]): Promise<ExpiringTaskRow[]> {
  return queryRows(db, EXPIRING, [retentionDays, limit, skipIds]);
}

const MARK_EXPIRED = statement(
  'worker-mark-files-expired',
  `WITH marked AS (
     UPDATE tasks SET files = '[]', files_expired_at = now()
      WHERE id = ANY($1::bigint[]) AND files_expired_at IS NULL
      RETURNING id
   ), inputs AS (
     DELETE FROM task_inputs WHERE task_id IN (SELECT id FROM marked)
   )
   SELECT id::text AS id FROM marked`,
  z.object({ id: z.string() }),
);

/** Marks these tasks' files expired (`files = []`, no `task_inputs` row); returns the ids it changed. */
export async function markFilesExpired(db: SqlExecutor, ids: readonly string[]): Promise<Set<string>> {
  return new Set((await queryRows(db, MARK_EXPIRED, [ids])).map((r) => r.id));
}
