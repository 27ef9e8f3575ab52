// The migration step of uploaded images (expand/contract, migration 20261124000000): rows written
// before the file store held inputs keep their bytes in `task_inputs.data`. This copies each to the
// store and then clears it, one small batch at a time, so PostgreSQL ends up holding metadata only.
import type pg from 'pg';
import { inputKey, type FileStore } from '@taskapi/file-store';

const OLD_ROWS = `
SELECT i.task_id::text AS task_id, t.public_id, i.content_type, i.data
  FROM task_inputs i JOIN tasks t ON t.id = i.task_id
 WHERE NOT i.in_store AND i.task_id > $1
 ORDER BY i.task_id
 LIMIT $2`;

// Only a row still holding its bytes is switched: running the command twice (or twice at once) is safe.
const MARK_STORED = 'UPDATE task_inputs SET in_store = true, data = NULL WHERE task_id = $1 AND NOT in_store';

/**
 * Run once every worker runs a release that reads inputs from the store (a worker of an older
 * release would find no bytes in the row). Returns how many images were moved.
 */
export async function moveInputsToStore(pool: pg.Pool, store: FileStore, batchSize = 50): Promise<{ moved: number }> {
  let moved = 0;
  let after = '0';
  for (;;) {
    const { rows } = await pool.query<{ task_id: string; public_id: string; content_type: string; data: Buffer }>(OLD_ROWS, [after, batchSize]);
    for (const row of rows) {
      // Store first, then clear the row: a failure in between leaves both copies, never none.
      await store.put(inputKey(row.public_id), row.data, row.content_type);
      moved += (await pool.query(MARK_STORED, [row.task_id])).rowCount ?? 0;
    }
    if (rows.length < batchSize) return { moved };
    after = (rows[rows.length - 1] as { task_id: string }).task_id;
  }
}
