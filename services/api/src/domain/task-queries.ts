import type { TaskKind } from '@taskapi/task-kinds';
import { ApiError } from '../errors';
import type { TaskRepository, TaskRow } from '../repositories/tasks';

export interface ListTasksQuery {
  statuses?: number[];
  kind?: TaskKind;
  fairnessKey?: string;
  limit: number;
  /** public_id of the last task of the previous page. */
  cursor?: string;
}

/** Newest first, keyset-paginated on the internal id; an unknown cursor is a 400. */
export async function listTasks(
  tasks: TaskRepository,
  accountId: string,
  q: ListTasksQuery,
): Promise<{ rows: TaskRow[]; nextCursor: string | null }> {
  let beforeId: string | undefined;
  if (q.cursor !== undefined) {
    const id = await tasks.idOf(accountId, q.cursor);
    if (id === null) throw new ApiError('UNKNOWN_CURSOR');
    beforeId = id;
  }
  // One row more than the page tells whether there is a next page.
  const rows = await tasks.list(accountId, { statuses: q.statuses, kind: q.kind, fairnessKey: q.fairnessKey, beforeId, limit: q.limit + 1 });
  const page = rows.slice(0, q.limit);
  return { rows: page, nextCursor: rows.length > q.limit ? (page[page.length - 1]?.public_id ?? null) : null };
}
