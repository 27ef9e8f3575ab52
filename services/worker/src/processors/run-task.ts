import { performance } from 'node:perf_hooks';
import { UnrecoverableError, WaitingError, type Job, type Processor } from 'bullmq';
import { recordTaskStatus, TaskStatus, type TaskKind } from '@taskapi/domain';
import type { EgressClient } from '@taskapi/egress';
import { flatLineWriter, type Logger } from '@taskapi/logger';
import { TASK_QUEUES, type TaskJob } from '@taskapi/queue';
import { abortable } from '../engines/abortable';
import type { Engine } from '../engines/engine';
import { finishAndAnnounce, type AnnounceDeps } from '../domain/finish-and-announce';
import { loadInputImage } from '../domain/input-image';
import { handBackTask, startTask, taskStatus } from '../domain/start-task';
import { decideFailure } from '../domain/task-failure';
import { failureMessage } from '../domain/failure-message';
import type { FileStore } from '@taskapi/file-store';
import type { TaskOutputs } from '../infra/file-store';
import type { RunOutcome, WorkerMetrics } from '../infra/metrics';

export interface RunTaskDeps extends AnnounceDeps {
  engine: Engine;
  /** Where outputs go and uploaded inputs are read from. */
  store: FileStore;
  files: TaskOutputs;
  egress: EgressClient;
  timeoutMs: number;
  metrics: WorkerMetrics;
  /** Aborted when the process shuts down: running engines stop and their jobs go back to the queue. */
  shutdown: AbortSignal;
  /** Engine runs in progress, so a shutdown can give abandoned ones a moment to clean up. */
  engineRuns: Set<Promise<unknown>>;
}

/** What a processed job reports (visible in Bull Board). */
export type RunTaskOutcome = { outcome: 'skipped' } | { outcome: 'completed' | 'failed'; status: number; error_code?: string };

const isLastAttempt = (job: Job) => job.attemptsMade + 1 >= (job.opts.attempts ?? 1);

/**
 * Runs one task: claim (status 10), engine with the kind's deadline, then exactly one terminal
 * transition. Permanent failures fail the task at once with a refund; transient ones are retried
 * by BullMQ and fail the task on the last attempt. A task that is already terminal (cancelled,
 * or finished by a concurrent run) is skipped.
 */
export function runTaskProcessor(deps: RunTaskDeps, kind: TaskKind): Processor<TaskJob, RunTaskOutcome> {
  const schema = TASK_QUEUES[kind].schema;
  // The two info lines of every task, written without winston's format chain; the rarer ones go
  // through a child logger made only when one is written.
  const startedLine = flatLineWriter(deps.logger, 'task started', ['public_id', 'job_id', 'kind', 'attempt']);
  const completedLine = flatLineWriter(deps.logger, 'task completed', ['public_id', 'job_id', 'kind']);
  return async (job, token) => {
    const parsed = schema.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError('malformed job data');
    const publicId = parsed.data.public_id;
    let child: Logger | undefined;
    const log = () => (child ??= deps.logger.child({ public_id: publicId, job_id: job.id, kind }));
    const info = deps.logger.isInfoEnabled();

    const task = await startTask(deps.db, publicId);
    if (!task) {
      log().info('task already finished or unknown; skipped');
      return { outcome: 'skipped' };
    }
    // The "processing" marker is written while the engine runs: markers only move forward, so it
    // can never undo the terminal one, and it is awaited before that transition (a Redis failure
    // still fails this run, as before).
    const marked = recordTaskStatus(deps.redis, task.account_id, publicId, TaskStatus.processing);
    marked.catch(() => undefined);
    if (info) startedLine('info', [publicId, job.id, kind, task.attempts]);
    const startedAt = performance.now();
    const observe = (outcome: RunOutcome) => deps.metrics.observeRun(kind, outcome, (performance.now() - startedAt) / 1000);

    const deadline = AbortSignal.timeout(deps.timeoutMs);
    const signal = AbortSignal.any([deadline, deps.shutdown]);
    try {
      // The engine is told to stop through `signal`, but a shutdown does not wait for it to obey:
      // the job goes back at once, whatever the engine is doing.
      const run = (async () => {
        const image = kind === 'face-detection' ? await loadInputImage(task, { egress: deps.egress, store: deps.store }, signal) : undefined;
        return deps.engine.run({ kind, publicId, params: task.params, image }, signal);
      })();
      deps.engineRuns.add(run);
      void run.catch(() => undefined).finally(() => deps.engineRuns.delete(run));
      const output = await abortable(run, deps.shutdown);
      if (signal.aborted) throw signal.reason as Error;
      await marked;
      const files = await deps.files.save(publicId, output.files ?? []);
      const finished = await finishAndAnnounce(deps, publicId, { status: TaskStatus.completed, result: output.result ?? null, files });
      if (!finished) {
        // Cancelled while running: its output is not wanted. (Finished by another run: keep the files.)
        if ((await taskStatus(deps.db, publicId)) === TaskStatus.cancelled) await deps.files.remove(publicId, files);
        log().info('task finished elsewhere while running; result discarded');
        observe('skipped');
        return { outcome: 'skipped' };
      }
      observe('completed');
      if (info) completedLine('info', [publicId, job.id, kind]);
      return { outcome: 'completed', status: TaskStatus.completed };
    } catch (err) {
      if (deps.shutdown.aborted && !deadline.aborted) {
        // Hand the job back untouched: the task is queued again without spending an attempt, and
        // the job waits for another worker (WaitingError: BullMQ neither fails nor retries it).
        const handedBack = await handBackTask(deps.db, task);
        try {
          await job.moveToWait(token);
        } catch (moveErr) {
          // The job lock was lost (another worker took the job as stalled): that run owns it now.
          log().warn('could not hand the job back; its lock was lost', { error: (moveErr as Error).message });
          throw new WaitingError();
        }
        observe('handed_back');
        log().info('task handed back to the queue (worker shutting down)', { task_requeued: handedBack });
        throw new WaitingError();
      }
      const decision = decideFailure(err, deadline.aborted);
      if (decision.kind === 'retry' && !isLastAttempt(job)) {
        log().warn('task attempt failed; will retry', { error: (err as Error).message, code: decision.code });
        observe('retried');
        throw err;
      }
      const finished = await finishAndAnnounce(deps, publicId, {
        status: TaskStatus.failed,
        errorCode: decision.code,
        errorMessage: failureMessage(err, decision.code, deps.timeoutMs),
      });
      log().warn('task failed', { error: (err as Error).message, error_code: decision.code, refunded: finished?.refunded ?? 0 });
      observe(finished ? 'failed' : 'skipped');
      return finished
        ? { outcome: 'failed', status: TaskStatus.failed, error_code: decision.code }
        : { outcome: 'skipped' };
    }
  };
}

