import type pg from 'pg';
import type { TaskKind } from '@taskapi/domain';
import { ApiError } from '../errors';
import type { TaskRow } from './task-view';

export const TASK_COLUMNS = `id, public_id, kind, status, error_code, input::text AS input, payload::text AS payload,
  callback_url, cost, created_at, started_at, finished_at, result::text AS result, files::text AS files`;

/** The account's task, or null (unknown, or another account's: indistinguishable on purpose). */
export async function getTask(pool: pg.Pool, accountId: string, publicId: string): Promise<TaskRow | null> {
  const { rows } = await pool.query<TaskRow>({
    name: 'task-by-public-id',
    text: `SELECT ${TASK_COLUMNS} FROM tasks WHERE public_id = $1 AND account_id = $2`,
    values: [publicId, accountId],
  });
  return rows[0] ?? null;
}

export async function getTaskById(pool: pg.Pool, id: string): Promise<TaskRow | null> {
  const { rows } = await pool.query<TaskRow>({
    name: 'task-by-id',
    text: `SELECT ${TASK_COLUMNS} FROM tasks WHERE id = $1`,
    values: [id],
  });
  return rows[0] ?? null;
}

export interface ListTasksQuery {
  statuses?: number[];
  kind?: TaskKind;
  limit: number;
  /** public_id of the last task of the previous page. */
  cursor?: string;
}

/** Newest first, keyset-paginated on the internal id. */
export async function listTasks(
  pool: pg.Pool,
  accountId: string,
  q: ListTasksQuery,
): Promise<{ rows: TaskRow[]; nextCursor: string | null }> {
  const values: unknown[] = [accountId];
  const where = ['account_id = $1'];
  let name = 'list-tasks';
  if (q.cursor !== undefined) {
    const { rows } = await pool.query<{ id: string }>({
      name: 'task-cursor',
      text: 'SELECT id FROM tasks WHERE public_id = $1 AND account_id = $2',
      values: [q.cursor, accountId],
    });
    if (!rows[0]) throw new ApiError('UNKNOWN_CURSOR');
    values.push(rows[0].id);
    where.push(`id < $${values.length}`);
    name += '-after';
  }
  if (q.statuses?.length) {
    values.push(q.statuses);
    where.push(`status = ANY($${values.length}::smallint[])`);
    name += '-status';
  }
  if (q.kind) {
    values.push(q.kind);
    where.push(`kind = $${values.length}::task_kind`);
    name += '-kind';
  }
  values.push(q.limit + 1);
  const { rows } = await pool.query<TaskRow>({
    name,
    text: `SELECT ${TASK_COLUMNS} FROM tasks WHERE ${where.join(' AND ')} ORDER BY id DESC LIMIT $${values.length}`,
    values,
  });
  const page = rows.slice(0, q.limit);
  return { rows: page, nextCursor: rows.length > q.limit ? (page[page.length - 1]?.public_id ?? null) : null };
}
