import type { Queryable } from '@taskapi/domain';
import type { TaskKind } from '@taskapi/domain';

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
  /**
   * An uploaded `image_base64`, when there is one: its bytes from `task_inputs.data` (rows written
   * before the file store held inputs), or `inStore` (read it from the store at `inputKey`).
   */
  upload: { contentType: string; data: Buffer } | { contentType: string; inStore: true } | null;
}

const CLAIM_SQL = `
WITH t AS (
  UPDATE tasks
     SET status = 10, started_at = COALESCE(started_at, now()), attempts = attempts + 1
   WHERE public_id = $1 AND status IN (0, 10)
  RETURNING id, public_id, account_id, kind, created_at, input, attempts
)
SELECT t.id::text AS id, t.public_id, t.account_id, t.kind::text AS kind, t.created_at, t.input::text AS input, t.attempts,
       i.content_type AS upload_type, i.data AS upload_data, i.in_store AS upload_in_store
  FROM t LEFT JOIN task_inputs i ON i.task_id = t.id`;

/**
 * Marks a queued (or previously interrupted) task as processing and loads its input. Returns null
 * when the task is unknown or already terminal (cancelled, or finished by another run): skip it.
 */
export async function startTask(db: Queryable, publicId: string): Promise<ClaimedTask | null> {
  const { rows } = await db.query<{
    id: string;
    public_id: string;
    account_id: string;
    kind: TaskKind;
    created_at: Date;
    input: string;
    attempts: number;
    upload_type: string | null;
    upload_data: Buffer | null;
    upload_in_store: boolean | null;
  }>({ name: 'worker-start-task', text: CLAIM_SQL, values: [publicId] });
  const row = rows[0];
  if (!row) return null;
  return {
    id: row.id,
    public_id: row.public_id,
    account_id: row.account_id,
    kind: row.kind,
    created_at: row.created_at,
    params: JSON.parse(row.input) as Record<string, unknown>,
    attempts: row.attempts,
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
 * Undoes `startTask` for a run that is handed back unfinished (the worker is shutting down): the
 * task is queued again and the attempt it used is given back. A task that meanwhile reached a
 * terminal status (cancelled), or that another run claimed since (this run lost its job lock), is
 * left alone. Returns whether the task was handed back.
 *
 * The Redis status marker keeps "processing" (it only moves forward); API replicas then read the
 * row from PostgreSQL until the next run claims it, moments later.
 */
export async function handBackTask(db: Queryable, task: Pick<ClaimedTask, 'public_id' | 'attempts'>): Promise<boolean> {
  const { rowCount } = await db.query({ name: 'worker-hand-back-task', text: HAND_BACK_SQL, values: [task.public_id, task.attempts] });
  return rowCount === 1;
}

/** The current status of a task, or null when it does not exist. */
export async function taskStatus(db: Queryable, publicId: string): Promise<number | null> {
  const { rows } = await db.query<{ status: number }>({
    name: 'worker-task-status',
    text: 'SELECT status FROM tasks WHERE public_id = $1',
    values: [publicId],
  });
  return rows[0]?.status ?? null;
}
