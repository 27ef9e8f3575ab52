import { TaskStatus } from './task-rules';

/**
 * `taskapi_task_e2e_seconds{kind,status}`: created → terminal. Observed where a task reaches its
 * terminal state: the worker (completed, failed) and the API (cancelled). Both processes declare it
 * with these buckets, so one `histogram_quantile` sums their series.
 */
export const TASK_E2E_METRIC = {
  name: 'taskapi_task_e2e_seconds',
  help: 'Time from task creation to its terminal state, by kind and terminal status (worker: completed, failed; API: cancelled)',
  labelNames: ['kind', 'status'] as const,
  buckets: [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600],
};

const TERMINAL_NAMES: Readonly<Record<number, string>> = {
  [TaskStatus.completed]: 'completed',
  [TaskStatus.failed]: 'failed',
  [TaskStatus.cancelled]: 'cancelled',
};

/** The `status` label of a terminal status code. */
export function terminalStatusName(status: number): string {
  return TERMINAL_NAMES[status] ?? 'unknown';
}

/** Seconds from creation to finish, never negative. */
export function e2eSeconds(createdAt: Date, finishedAt: Date): number {
  return Math.max(0, (finishedAt.getTime() - createdAt.getTime()) / 1000);
}
