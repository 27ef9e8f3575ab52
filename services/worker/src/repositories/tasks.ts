// Terminal tasks' files as the retention job reads and marks them, in batches. Typed statements on
// the pg pool (@taskapi/db). A task's status changes only in its lifecycle (@taskapi/task-lifecycle).
import { z } from 'zod';
import { queryRows, statement, type SqlExecutor } from '@taskapi/db';
import { TaskStatus } from '@taskapi/domain';

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
