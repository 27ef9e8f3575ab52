import { isTerminalStatus } from '@taskapi/domain';
import type { TaskReader } from './read-task';
import type { TaskRow } from './task-view';
import type { TaskWaiters } from './task-waiters';

export interface WaitDeps {
  taskReader: TaskReader;
  taskWaiters: TaskWaiters;
}

export interface WaitOutcome {
  row: TaskRow | null;
  /** False when the process could not wait (the caller omits `Preference-Applied`). */
  applied: boolean;
  /** The client disconnected: nothing should be sent. */
  gone: boolean;
}

/**
 * `Prefer: wait=N`: the task once terminal, or after `seconds` as it is then.
 * The waiter is registered before the task is read, and the terminal event is published by the
 * same Redis script that sets the status marker: so either the read sees the terminal marker, or
 * the event arrives after registration. No query runs while waiting.
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
  const waiter = deps.taskWaiters.register(publicId, seconds * 1000);
  if (!waiter) return { row: await deps.taskReader.readCurrent(accountId, publicId), applied: false, gone: false };
  onGone(() => waiter.end('gone'));
  try {
    const row = await deps.taskReader.readCurrent(accountId, publicId);
    if (!row || isTerminalStatus(row.status)) return { row, applied: true, gone: false };
    const reason = await waiter.woken;
    if (reason === 'gone') return { row, applied: true, gone: true };
    return { row: await deps.taskReader.readCurrent(accountId, publicId), applied: true, gone: false };
  } finally {
    waiter.end();
  }
}
