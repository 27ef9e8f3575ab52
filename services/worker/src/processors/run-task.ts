import { performance } from 'node:perf_hooks';
import { UnrecoverableError, type Processor } from 'bullmq';
import { TaskStatus } from '@taskapi/domain';
import type { TaskKind } from '@taskapi/task-kinds';
import type { EgressClient } from '@taskapi/egress';
import { flatLineWriter, type Logger } from '@taskapi/logger';
import { contextOf, SpanKind, SpanStatusCode, startSpan, withContext } from '@taskapi/telemetry';
import { TASK_QUEUES, type TaskJob } from '@taskapi/queue';
import type { Run, RunSystem, WorkerSlots } from '@taskapi/task-lifecycle';
import { abortable, type Engine, type EngineOutput } from '@taskapi/engines';
import type { FileStore } from '@taskapi/file-store';
import { loadInputImage } from '../domain/input-image';
import { modelUnavailableMessage } from '../domain/failure-message';
import { decideEnding, type RunEnding } from '../domain/run-ending';
import type { StoredFile, TaskOutputs } from '../infra/file-store';
import type { RunOutcome, WorkerMetrics } from '../infra/metrics';
import type { RunningTasks } from '../infra/running-tasks';

export interface RunTaskDeps {
  /** The task's lifecycle: every transition a run makes. */
  runs: RunSystem;
  /** This process's slots (a run's job ending frees one). */
  slots: WorkerSlots;
  engine: Engine;
  /** Where outputs go and uploaded inputs are read from. */
  store: FileStore;
  files: TaskOutputs;
  egress: EgressClient;
  timeoutMs: number;
  metrics: WorkerMetrics;
  logger: Logger;
  /** Aborted when the process shuts down: running engines stop and their tasks are handed back. */
  shutdown: AbortSignal;
  /** Engine runs in progress, so a shutdown can give abandoned ones a moment to clean up. */
  engineRuns: Set<Promise<unknown>>;
  /** Wait before the first retry after a transient failure (`TASK_RETRY_BACKOFF_MS`); doubled for each further one. */
  retryBackoffMs: number;
  /** A task that has waited this long in all on busy model servers fails (`MODEL_BUSY_TIMEOUT_MS`). */
  modelBusyTimeoutMs: number;
  /** The runs of this process by task, so a cancel (on any replica) stops the one running it. */
  running: RunningTasks;
}

/** What the end of a run is told besides its ending. */
interface EndContext {
  output: { result: unknown; files: StoredFile[] } | undefined;
  error: unknown;
  log: () => Logger;
  observe: (outcome: RunOutcome) => void;
  jobId: string | undefined;
  traceId: string | undefined;
}

/** What a processed job reports (visible in Bull Board). */
export type RunTaskOutcome =
  | { outcome: 'skipped' | 'deferred' | 'handed_back' | 'cancelled' | 'interrupted' }
  | { outcome: 'busy'; retry_in_ms: number }
  | { outcome: 'retrying'; attempt: number; retry_in_ms: number }
  | { outcome: 'completed' | 'failed'; status: number; error_code?: string };

/**
 * Runs one release of a task: the lifecycle's start (claim, status 10), the engine under the
 * kind's deadline, then the one transition `decideEnding` chooses (docs/architecture.md, "A task's
 * life"). Every transition tells the scheduler before the job ends, so the freed slot's next task
 * is already queued when BullMQ fetches the next job.
 */
export function runTaskProcessor(deps: RunTaskDeps, kind: TaskKind): Processor<TaskJob, RunTaskOutcome> {
  const schema = TASK_QUEUES[kind].schema;
  const queueName = TASK_QUEUES[kind].name;
  // The two info lines of every task, written without winston's format chain; the rarer ones go
  // through a child logger made only when one is written.
  const startedLine = flatLineWriter(deps.logger, 'task started', ['public_id', 'job_id', 'kind', 'attempt', 'trace_id']);
  const completedLine = flatLineWriter(deps.logger, 'task completed', ['public_id', 'job_id', 'kind', 'trace_id']);
  const info = deps.logger.isInfoEnabled();

  return async (job) => {
    const parsed = schema.safeParse(job.data);
    if (!parsed.success) throw new UnrecoverableError('malformed job data');
    const publicId = parsed.data.public_id;
    const started = await deps.runs.start({ kind, publicId, release: parsed.data.release ?? 1, accountId: parsed.data.account_id });
    if (!('run' in started)) {
      const outcome = 'skipped' in started ? 'skipped' : 'deferred';
      deps.logger.info(outcome === 'skipped' ? 'task already finished or unknown; skipped' : 'task not claimed before the worker stopped (PostgreSQL unavailable); released again', {
        public_id: publicId,
        job_id: job.id,
        kind,
      });
      return { outcome };
    }
    const { run } = started;
    try {
      return await carryOut(run, job.id);
    } finally {
      deps.slots.ended(run);
    }
  };

  async function carryOut(run: Run, jobId: string | undefined): Promise<RunTaskOutcome> {
    const { publicId, task } = run;
    // The run's span is the job's consumer span, a child of the creation's (the task's stored
    // `traceparent`), however the job came to be added: every run of a task is in its trace
    // (docs/architecture.md, "Tracing").
    const traced = startSpan(`run ${kind}`, {
      kind: SpanKind.CONSUMER,
      parent: contextOf(task.traceParent),
      attributes: {
        'taskapi.task.id': publicId,
        'taskapi.task.kind': kind,
        'taskapi.task.attempt': task.attempts,
        'messaging.system': 'bullmq',
        'messaging.operation.type': 'process',
        'messaging.destination.name': queueName,
        'messaging.message.id': jobId ?? '',
      },
    });
    let child: Logger | undefined;
    const log = () => (child ??= deps.logger.child({ public_id: publicId, job_id: jobId, kind, ...(traced.traceId ? { trace_id: traced.traceId } : {}) }));
    if (info) startedLine('info', [publicId, jobId, kind, task.attempts, traced.traceId]);
    const startedAt = performance.now();
    const observe = (outcome: RunOutcome) => deps.metrics.observeRun(kind, outcome, (performance.now() - startedAt) / 1000);

    const deadline = AbortSignal.timeout(deps.timeoutMs);
    // A cancel of this task (on any API replica) stops the engine within moments.
    const cancel = deps.running.add(publicId);
    const signal = AbortSignal.any([deadline, deps.shutdown, cancel.signal]);
    let output: { result: unknown; files: StoredFile[] } | undefined;
    let error: unknown;
    try {
      // The engine is told to stop through `signal`, but a shutdown does not wait for it to obey:
      // the task goes back at once, whatever the engine is doing.
      const engineRun = withContext(traced.context, async (): Promise<EngineOutput> => {
        const image = kind === 'face-detection' ? await loadInputImage(task, { egress: deps.egress, store: deps.store }, signal) : undefined;
        return deps.engine.run({ kind, publicId, params: task.params, image, attempt: task.attempts, progress: run.progress.report }, signal);
      });
      deps.engineRuns.add(engineRun);
      void engineRun.catch(() => undefined).finally(() => deps.engineRuns.delete(engineRun));
      const result = await abortable(engineRun, deps.shutdown);
      if (signal.aborted) throw signal.reason as Error;
      output = { result: result.result ?? null, files: await deps.files.save(publicId, result.files ?? []) };
    } catch (err) {
      error = err;
    } finally {
      cancel.end();
    }
    try {
      const ending: RunEnding = output
        ? { kind: 'complete' }
        : decideEnding({
            error,
            cancelled: cancel.signal.aborted,
            shuttingDown: deps.shutdown.aborted,
            timedOut: deadline.aborted,
            attempt: task.attempts,
            retryBackoffMs: deps.retryBackoffMs,
            timeoutMs: deps.timeoutMs,
          });
      if (ending.kind !== 'complete' && ending.kind !== 'cancelled') traced.span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
      // In the run's span, as the engine's requests are: its statements and Redis calls (opt-in
      // command spans) are the run's.
      return await withContext(traced.context, () => end(run, ending, { output, error, log, observe, jobId, traceId: traced.traceId }));
    } finally {
      traced.span.end();
    }
  }

  /** The run's one transition, its log line and its metric. */
  async function end(run: Run, ending: RunEnding, ctx: EndContext): Promise<RunTaskOutcome> {
    const { output, log, observe } = ctx;
    const reason = (ctx.error as Error | undefined)?.message;
    switch (ending.kind) {
      case 'complete': {
        const ended = await deps.runs.complete(run, output!);
        if ('interrupted' in ended) return interrupted(log, observe);
        if (!ended.finished) {
          // Cancelled while running: its output is not wanted. (Finished by another run: keep the files.)
          if ((await deps.runs.status(run)) === TaskStatus.cancelled) await deps.files.remove(run.publicId, output!.files);
          log().info('task finished elsewhere while running; result discarded');
          observe('skipped');
          return { outcome: 'skipped' };
        }
        observe('completed');
        if (info) completedLine('info', [run.publicId, ctx.jobId, kind, ctx.traceId]);
        return { outcome: 'completed', status: TaskStatus.completed };
      }
      case 'cancelled':
        // The cancel refunded it and kept its progress: the run's end only frees its slot.
        await deps.runs.cancelled(run);
        observe('cancelled');
        log().info('task cancelled while running; engine stopped');
        return { outcome: 'cancelled' };
      case 'hand-back': {
        if (ending.why === 'busy') {
          const busy = await deps.runs.busy(run, ending.delayMs, deps.modelBusyTimeoutMs);
          if ('timedOut' in busy) return end(run, { kind: 'fail', code: 'model_unavailable', message: modelUnavailableMessage(busy.busyMs) }, ctx);
          observe('busy');
          log().info('engine busy; task queued again', { reason, retry_in_ms: ending.delayMs, task_requeued: busy.handedBack });
          return { outcome: 'busy', retry_in_ms: ending.delayMs };
        }
        const handedBack = await deps.runs.handBack(run, ending.why, ending.delayMs);
        if (ending.why === 'model-mismatch') {
          observe('busy');
          log().info('model server cannot take what the kind sends; task queued again', { reason, retry_in_ms: ending.delayMs, task_requeued: handedBack });
          return { outcome: 'busy', retry_in_ms: ending.delayMs };
        }
        observe('handed_back');
        if (ending.why === 'shutdown') log().info('task handed back to the queue (worker shutting down)', { task_requeued: handedBack });
        else log().warn('task handed back without spending an attempt (a fault of the platform, not of the task)', { error: reason, task_requeued: handedBack });
        return { outcome: 'handed_back' };
      }
      case 'retry':
        // Still counted as running while it waits; it runs again ahead of its account's other tasks.
        await deps.runs.retry(run, ending.delayMs);
        log().warn('task attempt failed; will retry', { error: reason, code: ending.code, attempt: run.task.attempts, retry_in_ms: ending.delayMs });
        observe('retried');
        return { outcome: 'retrying', attempt: run.task.attempts, retry_in_ms: ending.delayMs };
      case 'fail': {
        const ended = await deps.runs.fail(run, { errorCode: ending.code, errorMessage: ending.message });
        if ('interrupted' in ended) return interrupted(log, observe);
        log().warn('task failed', { error: reason, error_code: ending.code, refunded: ended.finished?.refunded ?? 0 });
        observe(ended.finished ? 'failed' : 'skipped');
        return ended.finished ? { outcome: 'failed', status: TaskStatus.failed, error_code: ending.code } : { outcome: 'skipped' };
      }
    }
  }
}

/** The run's end could not be written before the worker stopped (PostgreSQL unavailable): released again. */
function interrupted(log: () => Logger, observe: (outcome: RunOutcome) => void): RunTaskOutcome {
  log().warn('the run could not record its end before the worker stopped (PostgreSQL unavailable); the task runs again');
  observe('handed_back');
  return { outcome: 'interrupted' };
}

