// How far a running task is, from 0 to 1 (docs/architecture.md, "Progress and task events"). While
// it runs, progress lives in one small Redis key beside the task's status marker (same hash tag),
// written at most twice a second by the task's lifecycle for the worker running it, never in
// PostgreSQL; the terminal transition keeps the last value in `tasks.progress`.
//
// Every change a client could watch for is announced on TASK_CHANGED_CHANNEL (`account public_id`):
// a status change that is not terminal (the terminal ones go to TASK_FINISHED_CHANNEL, beside the
// marker) and each stored progress value. API replicas wake the task's event streams with it.

/** Pub/sub channel of non-terminal changes: `accountId publicId` (progress) or `accountId publicId status`. */
export const TASK_CHANGED_CHANNEL = 'taskapi:task-changed';

/** The progress key shares the account's hash tag with the status marker and the rate-limit keys. */
export function taskProgressKey(accountId: string, publicId: string): string {
  return `taskapi:task:{${accountId}}:${publicId}:progress`;
}

/** As long as a non-terminal status marker: a task that runs longer than this just loses its bar. */
export const PROGRESS_TTL_SECONDS = 24 * 3600;

/** Most writes of one task's progress per second. */
export const PROGRESS_WRITES_PER_SECOND = 2;

/** Progress as the task JSON shows it: from 0 to 1, two decimals. NaN and out-of-range values are clamped. */
export function roundProgress(fraction: number): number {
  if (!(fraction > 0)) return 0;
  return fraction >= 1 ? 1 : Math.floor(fraction * 100) / 100;
}

/** Parses a stored progress value; null when there is none or it is not one. */
export function parseProgress(value: string | null | undefined): number | null {
  if (value === null || value === undefined || value === '') return null;
  const n = Number(value);
  return Number.isFinite(n) && n >= 0 && n <= 1 ? n : null;
}
