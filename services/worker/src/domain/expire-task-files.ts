import type { SqlExecutor } from '@taskapi/db';
import { expiringTasks, markFilesExpired, type ExpiringTaskRow } from '../repositories/tasks';
import { inputKey, outputKey, type FileStore } from '@taskapi/file-store';

export interface ExpireTaskFilesDeps {
  db: SqlExecutor;
  store: Pick<FileStore, 'deleteMany'>;
  /** Called after each batch, for the log line and the metrics. */
  onBatch?: (batch: ExpiredBatch) => void;
  /** Tasks whose objects could not be deleted this run (left for the next run). */
  onSkipped?: (publicIds: string[], error: unknown) => void;
  /** Aborted when the worker stops: the run ends after the batch in hand (the next run goes on). */
  signal?: AbortSignal;
}

/** What one batch did. */
export interface ExpiredBatch {
  /** Tasks marked `files_expired_at` by this batch. */
  tasks: number;
  /** Objects deleted from the store (outputs and uploaded inputs) for those tasks. */
  files: number;
}

const BATCH = 500;

/**
 * Retention (docs/operations.md): deletes the stored inputs and outputs of terminal tasks that finished
 * more than `retentionDays` ago, `batchSize` tasks at a time, and marks their rows (`files = []`,
 * `files_expired_at`, no `task_inputs` row). Objects go first and the row after: a crash in between
 * leaves a row that still matches and is done again on the next run (deleting a missing object is
 * not an error), never a row marked while its objects remain. The mark only counts rows it changed,
 * so two runs racing past the lock still count each task once.
 */
export async function expireTaskFiles(deps: ExpireTaskFilesDeps, retentionDays: number, batchSize = BATCH): Promise<ExpiredBatch> {
  const total: ExpiredBatch = { tasks: 0, files: 0 };
  // Tasks whose objects would not delete in this run: passed over, so one object the store keeps
  // refusing (a lock, a permission) never holds up every task behind it.
  const skipped: string[] = [];
  while (!deps.signal?.aborted) {
    const rows = await expiringTasks(deps.db, retentionDays, batchSize, skipped);
    if (rows.length === 0) return total;
    const deleted = await deleteObjects(deps, rows);
    skipped.push(...rows.filter((r) => !deleted.includes(r)).map((r) => r.id));
    const markedIds = await markFilesExpired(deps.db, deleted.map((r) => r.id));
    const batch: ExpiredBatch = { tasks: markedIds.size, files: rows.filter((r) => markedIds.has(r.id)).reduce((n, r) => n + r.files.length + (r.has_input ? 1 : 0), 0) };
    total.tasks += batch.tasks;
    total.files += batch.files;
    deps.onBatch?.(batch);
    if (rows.length < batchSize) return total;
  }
  return total;
}

/** Every object key of a task: its outputs, and its upload if it has one. */
function keysOf(row: ExpiringTaskRow): string[] {
  // Including uploads whose bytes are still in `data` (before `move-inputs-to-store`): deleting a
  // key that was never written is harmless.
  return [...row.files.map((f) => outputKey(row.public_id, f.name)), ...(row.has_input ? [inputKey(row.public_id)] : [])];
}

/** Deletes the batch's objects in one request; if that fails, task by task. Returns the tasks whose objects are gone. */
async function deleteObjects(deps: ExpireTaskFilesDeps, rows: ExpiringTaskRow[]): Promise<ExpiringTaskRow[]> {
  try {
    await deps.store.deleteMany(rows.flatMap(keysOf));
    return rows;
  } catch {
    const done: ExpiringTaskRow[] = [];
    for (const row of rows) {
      try {
        await deps.store.deleteMany(keysOf(row));
        done.push(row);
      } catch (err) {
        deps.onSkipped?.([row.public_id], err);
      }
    }
    return done;
  }
}
