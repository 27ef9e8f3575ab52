// Task statuses and error codes. The kinds are the task-kinds catalog's (@taskapi/task-kinds).

/** Task status codes (spec). */
export const TaskStatus = {
  queued: 0,
  processing: 10,
  completed: 20,
  failed: 30,
  cancelled: 40,
} as const;
export type TaskStatusCode = (typeof TaskStatus)[keyof typeof TaskStatus];

export const TASK_STATUSES: readonly TaskStatusCode[] = [0, 10, 20, 30, 40];

export function isTerminalStatus(status: number): boolean {
  return status === TaskStatus.completed || status === TaskStatus.failed || status === TaskStatus.cancelled;
}

/** The `error_code` values of a failed task (spec; status 30). */
export const FAILURE_ERROR_CODES = ['invalid_input', 'image_fetch_failed', 'engine_error', 'timeout', 'internal_error', 'model_unavailable'] as const;
export type TaskErrorCode = (typeof FAILURE_ERROR_CODES)[number];

/**
 * The documented, fixed set of `error_code` values: a failed task's, and `expired` on a task
 * cancelled because it did not start within its `ttl_seconds`.
 */
export const TASK_ERROR_CODES = [...FAILURE_ERROR_CODES, 'expired'] as const;

/** The `error_message` of a task that failed for reasons of ours (`internal_error`; it was refunded). */
export const INTERNAL_ERROR_MESSAGE = 'The task could not be run; it was refunded. Please try again.';

export type ApiKeyType = 'paid' | 'trial';
