import { TaskStatus, type Queryable } from '@taskapi/domain';
import { inputKey, outputKey, type FileStore } from '@taskapi/file-store';

export interface ExpireTaskFilesDeps {
  db: Queryable;
  store: Pick<FileStore, 'deleteMany'>;
  /** Called after each batch, for the log line and the metrics. */
  onBatch?: (batch: ExpiredBatch) => void;
}

/** What one batch did. */
export interface ExpiredBatch {
  /** Tasks marked `files_expired_at` by this batch. */
  tasks: number;
  /** Objects deleted from the store (outputs and uploaded inputs) for those tasks. */
  files: number;
}

const BATCH = 500;
const TERMINAL = [TaskStatus.completed, TaskStatus.failed, TaskStatus.cancelled];

interface ExpiringTaskRow {
  id: string;
  public_id: string;
  files: Array<{ name: string }>;
  has_input: boolean;
}

/**
 * Retention (DESIGN §11): deletes the stored inputs and outputs of terminal tasks that finished
 * more than `retentionDays` ago, `batchSize` tasks at a time, and marks their rows (`files = []`,
 * `files_expired_at`, no `task_inputs` row). Objects go first and the row after: a crash in between
 * leaves a row that still matches and is done again on the next run (deleting a missing object is
 * not an error), never a row marked while its objects remain. The mark only counts rows it changed,
 * so two runs racing past the lock still count each task once.
 */
export async function expireTaskFiles(deps: ExpireTaskFilesDeps, retentionDays: number, batchSize = BATCH): Promise<ExpiredBatch> {
  const total: ExpiredBatch = { tasks: 0, files: 0 };
  for (;;) {
    // Marked rows leave the filter (and the partial index tasks_retention_idx), so no cursor is needed.
    const { rows } = await deps.db.query<ExpiringTaskRow>({
      name: 'worker-expiring-tasks',
      text: `SELECT t.id::text AS id, t.public_id, t.files, EXISTS (SELECT 1 FROM task_inputs i WHERE i.task_id = t.id) AS has_input
               FROM tasks t
              WHERE t.status = ANY($1::smallint[]) AND t.files_expired_at IS NULL
                AND t.finished_at < now() - make_interval(days => $2::int)
              ORDER BY t.finished_at LIMIT $3`,
      values: [TERMINAL, retentionDays, batchSize],
    });
    if (rows.length === 0) return total;
    // Every upload has its object key, including rows whose bytes are still in `data` (before
    // `move-inputs-to-store`): deleting a key that was never written is harmless.
    const keys = rows.flatMap((row) => [...row.files.map((f) => outputKey(row.public_id, f.name)), ...(row.has_input ? [inputKey(row.public_id)] : [])]);
    await deps.store.deleteMany(keys);
    const marked = await deps.db.query<{ id: string }>({
      name: 'worker-mark-files-expired',
      text: `WITH marked AS (
               UPDATE tasks SET files = '[]', files_expired_at = now()
                WHERE id = ANY($1::bigint[]) AND files_expired_at IS NULL
                RETURNING id
             ), inputs AS (
               DELETE FROM task_inputs WHERE task_id IN (SELECT id FROM marked)
             )
             SELECT id::text AS id FROM marked`,
      values: [rows.map((r) => r.id)],
    });
    const markedIds = new Set(marked.rows.map((r) => r.id));
    const batch: ExpiredBatch = { tasks: markedIds.size, files: rows.filter((r) => markedIds.has(r.id)).reduce((n, r) => n + r.files.length + (r.has_input ? 1 : 0), 0) };
    total.tasks += batch.tasks;
    total.files += batch.files;
    deps.onBatch?.(batch);
    if (rows.length < batchSize) return total;
  }
}
