// The migration step of uploaded images (expand/contract, migration 20261124000000): rows written
// before the file store held inputs keep their bytes in `task_inputs.data`. This copies each to the
// store and then clears it, one small batch at a time, so PostgreSQL ends up holding metadata only.
import { inputKey, type FileStore } from '@taskapi/file-store';
import type { TaskRepository } from '../repositories/tasks';

/**
 * Run once every worker runs a release that reads inputs from the store (a worker of an older
 * release would find no bytes in the row). Returns how many images were moved.
 */
export async function moveInputsToStore(tasks: TaskRepository, store: FileStore, batchSize = 50): Promise<{ moved: number }> {
  let moved = 0;
  let after = '0';
  for (;;) {
    const rows = await tasks.inputsInRows(after, batchSize);
    for (const row of rows) {
      // Store first, then clear the row: a failure in between leaves both copies, never none.
      await store.put(inputKey(row.public_id), row.data, row.content_type);
      if (await tasks.markInputStored(row.task_id)) moved++;
    }
    const last = rows.at(-1);
    if (rows.length < batchSize || !last) return { moved };
    after = last.task_id;
  }
}
