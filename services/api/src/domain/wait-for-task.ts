import { isTerminalStatus } from '@taskapi/domain';
import type { TaskReader, TaskSnapshot } from './read-task';
import type { TaskWaiters } from './task-waiters';

export interface WaitDeps {
  taskReader: TaskReader;
  taskWaiters: TaskWaiters;
}

export interface WaitOutcome {
  /** The task as it is when the wait ends; null when it is unknown (or another account's). */
  task: TaskSnapshot | null;
  /** False when the process could not wait (the caller omits `Preference-Applied`). */
  applied: boolean;
  /** The client disconnected: nothing should be sent. */
  gone: boolean;
}

/**
 * `Prefer: wait=N`: the task once terminal, or after `seconds` as it is then.
 * The waiter is registered before the task is read, and the terminal event is published by the
 * same Redis script that sets the status marker: so either the read sees the terminal marker, or
 * the event arrives after registration. No query runs while waiting. After a subscriber reconnect
 * the task is read again (events may have been lost) and, if still not terminal, waited for anew
 * until the same deadline. At shutdown the current state is answered at once, not applied.
 *
 * @param onGone registers a callback for the client's disconnect.
 */
export async function waitForTask(
  deps: WaitDeps,
  accountId: string,
  publicId: string,
  seconds: number,
  onGone: (cb: () => void) => void,
): Promise<WaitOutcome> {
  const read = () => deps.taskReader.readCurrent(accountId, publicId);
  const deadline = Date.now() + seconds * 1000;
  let waiter = deps.taskWaiters.register(accountId, publicId, seconds * 1000);
  if (!waiter) return { task: await read(), applied: false, gone: false };
  let gone = false;
  onGone(() => {
    gone = true;
    waiter?.end('gone');
  });
  try {
    for (;;) {
      const task = await read();
      if (!task || isTerminalStatus(task.row.status)) return { task, applied: true, gone: false };
      const reason = await waiter.woken;
      if (reason === 'gone' || gone) return { task, applied: true, gone: true };
      if (reason === 'released') return { task: await read(), applied: false, gone: false };
      if (reason !== 'recheck') return { task: await read(), applied: true, gone: false };
      const left = deadline - Date.now();
      const again = left > 0 ? deps.taskWaiters.register(accountId, publicId, left) : null;
      if (!again) return { task: await read(), applied: left <= 0, gone: false };
      waiter = again;
      if (gone) return { task: null, applied: true, gone: true };
    }
  } finally {
    waiter.end();
  }
}
