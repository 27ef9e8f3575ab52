import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { FAILURE_ERROR_CODES, TASK_E2E_METRIC, type TaskErrorCode } from '@taskapi/domain';
import type { TaskKind } from '@taskapi/task-kinds';

/** How a task run ended, as counted. */
export type RunOutcome = 'completed' | 'failed' | 'skipped' | 'retried' | 'handed_back' | 'busy' | 'cancelled';

/** Prometheus metrics of one worker process (its own registry, so tests can run several). */
export interface WorkerMetrics {
  registry: Registry;
  observeRun(kind: TaskKind, outcome: RunOutcome, seconds: number): void;
  /**
   * `taskapi_task_e2e_seconds`: a task this worker moved to completed or failed. A failed one
   * (`errorCode` given) is also counted in `taskapi_worker_tasks_failed_total{kind,error_code}`.
   */
  observeE2e(kind: string, status: string, seconds: number, errorCode?: TaskErrorCode): void;
  /** A retention batch: tasks whose files expired, and the stored objects deleted for them. */
  countExpired(tasks: number, files: number): void;
}

export interface WorkerMetricsOptions {
  defaultMetrics?: boolean;
  /**
   * The kinds this worker runs (`WORKER_KINDS`): their failed-task series start at 0, so the first
   * failure after a start shows in `increase()` (a series born at 1 has no increase to show).
   */
  kinds?: readonly TaskKind[];
}

export function createWorkerMetrics(opts: WorkerMetricsOptions = {}): WorkerMetrics {
  const registry = new Registry();
  if (opts.defaultMetrics) collectDefaultMetrics({ register: registry });
  const runs = new Counter({
    name: 'taskapi_worker_task_runs_total',
    help: 'Task runs by kind and outcome (completed, failed, skipped, retried, handed_back, busy: a model server refused it, cancelled: stopped by a cancel)',
    labelNames: ['kind', 'outcome'],
    registers: [registry],
  });
  const duration = new Histogram({
    name: 'taskapi_worker_task_run_seconds',
    help: 'Duration of task runs (claim to terminal transition) by kind and outcome',
    labelNames: ['kind', 'outcome'],
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300],
    registers: [registry],
  });
  const e2e = new Histogram({ ...TASK_E2E_METRIC, labelNames: [...TASK_E2E_METRIC.labelNames], registers: [registry] });
  // Labels from closed sets: the configured kinds and the task error codes.
  const failed = new Counter({
    name: 'taskapi_worker_tasks_failed_total',
    help: 'Tasks this worker moved to failed, by kind and error_code (invalid_input, image_fetch_failed, engine_error, timeout, internal_error, model_unavailable); every failing path counts: runs, given-up jobs, the sweeper',
    labelNames: ['kind', 'error_code'],
    registers: [registry],
  });
  for (const kind of opts.kinds ?? []) for (const code of FAILURE_ERROR_CODES) failed.inc({ kind, error_code: code }, 0);
  const expiredTasks = new Counter({
    name: 'taskapi_retention_expired_tasks_total',
    help: 'Terminal tasks whose stored files the retention job deleted (RETENTION_DAYS after they finished)',
    registers: [registry],
  });
  const deletedFiles = new Counter({
    name: 'taskapi_retention_deleted_files_total',
    help: 'Stored objects (outputs and uploaded inputs) the retention job deleted',
    registers: [registry],
  });
  return {
    registry,
    observeRun(kind, outcome, seconds) {
      runs.inc({ kind, outcome });
      duration.observe({ kind, outcome }, seconds);
    },
    observeE2e(kind, status, seconds, errorCode) {
      e2e.observe({ kind, status }, seconds);
      if (errorCode) failed.inc({ kind, error_code: errorCode });
    },
    countExpired(tasks, files) {
      expiredTasks.inc(tasks);
      deletedFiles.inc(files);
    },
  };
}
