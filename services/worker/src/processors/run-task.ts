import { performance } from 'node:perf_hooks';
import { UnrecoverableError, type Job, type Processor } from 'bullmq';
import { ProgressThrottle, recordHandBack, recordTaskProgress, recordTaskStatus, TaskStatus } from '@taskapi/domain';
import type { TaskKind } from '@taskapi/task-kinds';
import type { EgressClient } from '@taskapi/egress';
import { flatLineWriter, type Logger } from '@taskapi/logger';
import { SpanStatusCode, startSpan, taskContext, withContext } from '@taskapi/telemetry';
import { TASK_MAX_ATTEMPTS, TASK_QUEUES, type TaskJob } from '@taskapi/queue';
import type { TaskRunRef, TaskScheduler, WorkerReport } from '@taskapi/scheduler';
import { abortable, EngineBusyError, type Engine } from '@taskapi/engines';
import { finishAndAnnounce, type AnnounceDeps } from '../domain/finish-and-announce';
import { loadInputImage } from '../domain/input-image';
import { claimTask, handBackTask, taskStatus } from '../repositories/tasks';
import { decideFailure } from '../domain/task-failure';
import { failureMessage } from '../domain/failure-message';
import type { FileStore } from '@taskapi/file-store';
import type { TaskOutputs } from '../infra/file-store';
import type { RunOutcome, WorkerMetrics } from '../infra/metrics';
import type { RunningTasks } from '../infra/running-tasks';
import type { WorkerSlots } from '../infra/worker-slots';

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
  /** Told when a run starts and how it ends, so it can give the freed slot to the next task. */
  scheduler: TaskScheduler;
  /** This process's slots and starts, reported with each call to the scheduler. */
  slots: WorkerSlots;
  /** Wait before the first retry after a transient failure (`TASK_RETRY_BACKOFF_MS`); doubled for each further one. */
  retryBackoffMs: number;
  /** The runs of this process by task, so a cancel (on any replica) stops the one running it. */
  running: RunningTasks;
  /**
   * A task found already terminal may have left a prediction on a model server (handed back at a
   * shutdown, then cancelled while queued): cancelled now, since nobody will read it.
   */
  abandonPrediction?: (publicId: string) => Promise<void>;
}

/** What a processed job reports (visible in Bull Board). */
export type RunTaskOutcome =
  | { outcome: 'skipped' | 'handed_back' | 'cancelled' }
  | { outcome: 'busy'; retry_in_ms: number }
  | { outcome: 'retrying'; attempt: number; retry_in_ms: number }
  | { outcome: 'completed' | 'failed'; status: number; error_code?: string };

/**
 * Runs one release of a task: claim (status 10), engine with the kind's deadline, then exactly one
 * terminal transition. Permanent failures fail the task at once with a refund; a transient one
 * goes back to the scheduler to run again after a back-off, and fails the task on the last of
 * `TASK_MAX_ATTEMPTS` runs. A task that is already terminal (cancelled, or finished by a
 * concurrent run) is skipped. Every way a run ends is reported to the scheduler before the job
 * ends, so the freed slot's next task is already queued when BullMQ fetches the next job.
 */
export function runTaskProcessor(deps: RunTaskDeps, kind: TaskKind): Processor<TaskJob, RunTaskOutcome> {
  const schema = TASK_QUEUES[kind].schema;
  // The two info lines of every task, written without winston's format chain; the rarer ones go
  // through a child logger made only when one is written.
  const startedLine = flatLineWriter(deps.logger, 'task started', ['public_id', 'job_id', 'kind', 'attempt', 'trace_id']);
  const completedLine = flatLineWriter(deps.logger, 'task completed', ['public_id', 'job_id', 'kind', 'trace_id']);
  return async (job) => {
    let run: TaskRunRef | undefined;
    try {
      return await runOnce(job, (started) => (run = started));
    } finally {
      if (run) deps.slots.ended(run);
    }
  };

  async function runOnce(job: Job<TaskJob>, onStart: (run: TaskRunRef) => void): Promise<RunTaskOutcome> {
    const parsed = schema.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError('malformed job data');
    const publicId = parsed.data.public_id;
    let child: Logger | undefined;
    let traceId: string | undefined = undefined;
    const log = () => (child ??= deps.logger.child({ public_id: publicId, job_id: job.id, kind, ...(traceId ? { trace_id: traceId } : {}) }));
    const info = deps.logger.isInfoEnabled();
    // The scheduler's state is repaired by the sweeper when a report is lost: a failed report is a
    // warning, never a failed run. Each call carries this worker's report (its starts, idle slots).
    const tell = async (what: string, call: (report: WorkerReport) => Promise<void>, ending?: TaskRunRef) => {
      try {
        await deps.slots.send(call, ending);
      } catch (err) {
        log().warn(`could not tell the scheduler the run ${what}; the sweeper will`, { error: (err as Error).message });
      }
    };

    const task = await claimTask(deps.db, publicId);
    if (!task) {
      await tell('found nothing to do', (report) => deps.scheduler.done(publicId, report));
      await deps.abandonPrediction?.(publicId).catch((err: unknown) => log().warn('could not cancel the prediction of a finished task', { error: (err as Error).message }));
      log().info('task already finished or unknown; skipped');
      return { outcome: 'skipped' };
    }
    // The run's span joins the task's trace: under BullMQ's consumer span when the job was added
    // in it, else under the creation's span (a job the sweeper re-added, or released by another task).
    const traced = startSpan(`run ${kind}`, {
      parent: taskContext(task.traceParent),
      attributes: { 'taskapi.task.id': publicId, 'taskapi.task.kind': kind, 'taskapi.task.attempt': task.attempts, 'messaging.message.id': job.id ?? '' },
    });
    traceId = traced.traceId;
    const run: TaskRunRef = {
      kind,
      publicId,
      accountId: task.account_id,
      order: task.id,
      createdAt: task.created_at,
      release: parsed.data.release ?? 1,
      traceParent: task.traceParent ?? undefined,
    };
    // Reported with this worker's next call to the scheduler (this run's end, at the latest).
    deps.slots.started(run);
    onStart(run);
    // The "processing" marker is written while the engine runs: markers only move forward, so it
    // can never undo the terminal one, and it is awaited before that transition (a Redis failure
    // still fails this run, as before).
    const marked = recordTaskStatus(deps.redis, task.account_id, publicId, TaskStatus.processing);
    marked.catch(() => undefined);
    if (info) startedLine('info', [publicId, job.id, kind, task.attempts, traceId]);
    const startedAt = performance.now();
    const observe = (outcome: RunOutcome) => deps.metrics.observeRun(kind, outcome, (performance.now() - startedAt) / 1000);
    // The run's end, told once the terminal transition is committed, beside its announcement.
    const ended = () => tell('ended', (report) => deps.scheduler.done(publicId, report), run);

    // After a hand-back's commit: readers and event streams see the task queued again.
    // (After the run's own "processing" write, or that write could land after it.)
    const announceHandBack = async () => {
      await marked.catch(() => undefined);
      await recordHandBack(deps.redis, task.account_id, publicId).catch((err: unknown) =>
        log().warn('could not record the hand-back in Redis; readers show the task processing until it runs again', { error: (err as Error).message }),
      );
    };
    const deadline = AbortSignal.timeout(deps.timeoutMs);
    // A cancel of this task (on any API replica) stops the engine within moments.
    const cancel = deps.running.add(publicId);
    const signal = AbortSignal.any([deadline, deps.shutdown, cancel.signal]);
    // At most two progress writes a second, in Redis; the last value is kept when the task fails.
    const progress = new ProgressThrottle(
      (p) => recordTaskProgress(deps.redis, task.account_id, publicId, p),
      (err) => log().warn('could not store the task progress', { error: (err as Error).message }),
    );
    try {
      // The engine is told to stop through `signal`, but a shutdown does not wait for it to obey:
      // the task goes back at once, whatever the engine is doing.
      const running = withContext(traced.context, async () => {
        const image = kind === 'face-detection' ? await loadInputImage(task, { egress: deps.egress, store: deps.store }, signal) : undefined;
        return deps.engine.run({ kind, publicId, params: task.params, image, attempt: task.attempts, progress: progress.report }, signal);
      });
      deps.engineRuns.add(running);
      void running.catch(() => undefined).finally(() => deps.engineRuns.delete(running));
      const output = await abortable(running, deps.shutdown);
      if (signal.aborted) throw signal.reason as Error;
      await progress.stop();
      await marked;
      const files = await deps.files.save(publicId, output.files ?? []);
      const finished = await finishAndAnnounce(deps, publicId, { status: TaskStatus.completed, result: output.result ?? null, files }, ended);
      if (!finished) {
        // Cancelled while running: its output is not wanted. (Finished by another run: keep the files.)
        if ((await taskStatus(deps.db, publicId)) === TaskStatus.cancelled) await deps.files.remove(publicId, files);
        log().info('task finished elsewhere while running; result discarded');
        observe('skipped');
        return { outcome: 'skipped' };
      }
      observe('completed');
      if (info) completedLine('info', [publicId, job.id, kind, traceId]);
      return { outcome: 'completed', status: TaskStatus.completed };
    } catch (err) {
      await progress.stop();
      if (cancel.signal.aborted && !deps.shutdown.aborted) {
        // Cancelled while running (the cancel refunded it and keeps its progress): nothing to record.
        await tell('was cancelled', (report) => deps.scheduler.done(publicId, report), run);
        observe('cancelled');
        log().info('task cancelled while running; engine stopped');
        return { outcome: 'cancelled' };
      }
      if (err instanceof EngineBusyError && !signal.aborted) {
        // Not a failure: queued again without spending an attempt, at the front of its account's
        // line, offered again after a moment (the model server was at capacity or starting).
        const handedBack = await handBackTask(deps.db, task);
        await tell('was refused as busy', (report) => deps.scheduler.retryLater(run, err.retryInMs, report), run);
        if (handedBack) await announceHandBack();
        observe('busy');
        log().info('engine busy; task queued again', { reason: err.message, retry_in_ms: err.retryInMs, task_requeued: handedBack });
        return { outcome: 'busy', retry_in_ms: err.retryInMs };
      }
      if (deps.shutdown.aborted && !deadline.aborted) {
        // Hand the task back untouched: queued again without spending an attempt, keeping its place
        // (this job ends; the scheduler releases the task again at the head of the kind's queue).
        const handedBack = await handBackTask(deps.db, task);
        // The scheduler first: a process stopping must not lose the task's place for a marker.
        await tell('was handed back', (report) => deps.scheduler.handBack(run, report), run);
        if (handedBack) await announceHandBack();
        observe('handed_back');
        log().info('task handed back to the queue (worker shutting down)', { task_requeued: handedBack });
        return { outcome: 'handed_back' };
      }
      const decision = decideFailure(err, deadline.aborted);
      traced.span.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
      if (decision.kind === 'retry' && task.attempts < TASK_MAX_ATTEMPTS) {
        const delayMs = deps.retryBackoffMs * 2 ** Math.max(0, task.attempts - 1);
        // Still counted as running while it waits; it runs again ahead of its account's other tasks.
        await tell('will be retried', (report) => deps.scheduler.retryLater(run, delayMs, report), run);
        log().warn('task attempt failed; will retry', { error: (err as Error).message, code: decision.code, attempt: task.attempts, retry_in_ms: delayMs });
        observe('retried');
        return { outcome: 'retrying', attempt: task.attempts, retry_in_ms: delayMs };
      }
      const finished = await finishAndAnnounce(
        deps,
        publicId,
        { status: TaskStatus.failed, errorCode: decision.code, errorMessage: failureMessage(err, decision.code, deps.timeoutMs), progress: progress.last },
        ended,
      );
      log().warn('task failed', { error: (err as Error).message, error_code: decision.code, refunded: finished?.refunded ?? 0 });
      observe(finished ? 'failed' : 'skipped');
      return finished ? { outcome: 'failed', status: TaskStatus.failed, error_code: decision.code } : { outcome: 'skipped' };
    } finally {
      cancel.end();
      traced.span.end();
    }
  }
}
