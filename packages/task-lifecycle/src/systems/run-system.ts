// The transitions of a run, as a worker makes them (docs/architecture.md, "A task's life"): start
// (claim), progress, and the one way it ends — complete, fail, retry after a transient engine
// failure, hand back (no attempt spent), cancelled while running — or skip when the claim finds
// nothing to do. Each writes the stores in STORE_ORDER; the worker's processor only decides
// which one.
import { TaskStatus, type TaskErrorCode } from '@taskapi/domain';
import { newId } from '@taskapi/ids';
import type { RunRelease, TaskRunRef, WorkerReport } from '@taskapi/scheduler';
import { isPlatformFault, retryWhileUnavailable, StoppedWhileUnavailableError } from '@taskapi/service';
import type { TaskKind } from '@taskapi/task-kinds';
import { ProgressThrottle } from '../progress-throttle';
import type { ClaimedTask, FinishedTask, FinishTaskInput, LifecycleResources } from '../stores';
import type { TransitionWriter } from '../transition';
import type { WorkerSlots } from '../worker-slots';

/** A job's run of a task, before its claim. */
export interface RunRequest {
  kind: TaskKind;
  publicId: string;
  /** The job's release (1 for jobs queued before the scheduler). */
  release: number;
  /** The task's account, when the job carries it. */
  accountId?: string | undefined;
}

/** A claimed run: the task is status 10 and this run holds its job. */
export interface Run extends TaskRunRef {
  task: ClaimedTask;
  /** Settles once the "processing" marker is written (or failed to be); every end waits for it. */
  readonly marked: Promise<void>;
  /** The engine's progress reports, written at most twice a second. */
  readonly progress: ProgressThrottle;
}

/** How a start went: a run to carry out, nothing to do, or no claim possible before the worker stopped. */
export type Started = { run: Run } | { skipped: true } | { deferred: true };

/** Why a run is handed back without spending an attempt. */
export type HandBackReason = 'shutdown' | 'platform-fault' | 'busy' | 'model-mismatch';

/** The end of a run: what the database committed (null when the task had moved on), or `interrupted`. */
export type RunEnd = { finished: FinishedTask | null } | { interrupted: true };

export interface RunSystemOptions {
  /** This process's slots: every call to the scheduler carries its report. */
  slots: WorkerSlots;
  /** Aborted when the worker stops: waits for an unavailable store end, running work is handed back. */
  shutdown: AbortSignal;
}

export class RunSystem {
  constructor(
    private readonly r: LifecycleResources,
    private readonly writer: TransitionWriter,
    private readonly opts: RunSystemOptions,
  ) {}

  /** One call to the scheduler, carrying this worker's report; `ending`: the run it ends (its slot counts as idle). */
  private tell(call: (report: WorkerReport) => Promise<void>, ending?: TaskRunRef): Promise<void> {
    return this.opts.slots.send(call, ending);
  }

  /**
   * Start: the task is claimed (status 10, one attempt more), its "processing" marker written while
   * the engine starts, and the start reported to the scheduler with this worker's next call. A
   * task already terminal or unknown is skipped. PostgreSQL unavailable: the claim waits for it;
   * a worker stopping meanwhile defers the run (the scheduler releases it again).
   */
  async start(req: RunRequest): Promise<Started> {
    const { database, markers } = this.r.stores;
    let run: Run | undefined;
    let claimed: ClaimedTask | null;
    try {
      claimed = await this.writer.run(
        'start',
        req.publicId,
        {
          database: () => database.claim(req.publicId),
          markers: async (task) => {
            if (!task) return;
            const marked = markers.status(task.account_id, task.public_id, TaskStatus.processing).then(
              () => undefined,
              (err: unknown) => {
                this.r.logger.warn('start: markers not written; readers go to PostgreSQL within 5 s', { public_id: task.public_id, error: (err as Error).message });
              },
            );
            run = this.newRun(req, task, marked);
          },
          // Reported with this worker's next call to the scheduler (this run's end, at the latest).
          scheduler: async () => {
            if (run) this.opts.slots.started(run);
          },
        },
        { waitWhileUnavailable: this.opts.shutdown },
      );
    } catch (err) {
      if (!(err instanceof StoppedWhileUnavailableError)) throw err;
      await this.defer(req);
      return { deferred: true };
    }
    if (!claimed) {
      await this.skip(req);
      return { skipped: true };
    }
    return { run: run ?? this.newRun(req, claimed, Promise.resolve()) };
  }

  private newRun(req: RunRequest, task: ClaimedTask, marked: Promise<void>): Run {
    const progress = new ProgressThrottle(
      (p) => this.r.stores.markers.progress(task.account_id, task.public_id, p),
      (err) => this.r.logger.warn('progress: markers not written', { public_id: task.public_id, error: (err as Error).message }),
    );
    return {
      kind: req.kind,
      publicId: task.public_id,
      accountId: task.account_id,
      order: task.id,
      createdAt: task.created_at,
      release: req.release,
      traceParent: task.traceParent ?? undefined,
      task,
      marked,
      progress,
    };
  }

  /** Skip: the claim found the task terminal or unknown; its place is freed and any prediction it left is abandoned. */
  private async skip(req: RunRequest): Promise<void> {
    await this.writer.run('skip', req.publicId, {
      database: async () => null,
      scheduler: () => this.tell((report) => this.r.stores.scheduler.done(req.publicId, report)),
      predictions: () => this.r.stores.predictions.abandon(req.kind, req.publicId),
    });
  }

  /** The run could not be claimed before the worker stopped: released again, keeping its place. */
  private async defer(req: RunRequest): Promise<void> {
    const ref: RunRelease = { kind: req.kind, publicId: req.publicId, accountId: req.accountId ?? '', release: req.release };
    await this.writer.run('defer', req.publicId, {
      database: async () => null,
      scheduler: () => this.tell((report) => this.r.stores.scheduler.handBack(ref, report)),
    });
  }

  /** Complete: status 20 with the result and files, the webhook delivery when there is a callback. */
  complete(run: Run, output: { result: unknown; files: unknown[] }): Promise<RunEnd> {
    return this.finish(run, 'complete', { status: TaskStatus.completed, result: output.result, files: output.files });
  }

  /** Fail: status 30 with the code and its sentence, refunded, the webhook delivery when there is a callback. */
  fail(run: Run, failure: { errorCode: TaskErrorCode; errorMessage: string }): Promise<RunEnd> {
    return this.finish(run, 'fail', { status: TaskStatus.failed, errorCode: failure.errorCode, errorMessage: failure.errorMessage, progress: run.progress.last });
  }

  /**
   * The terminal transition of a run. PostgreSQL and Redis outages are waited out (the result is
   * never lost to the platform's own faults); a worker that stops meanwhile leaves the run
   * `interrupted`: released again, it runs once more.
   */
  private async finish(run: Run, transition: string, input: FinishTaskInput): Promise<RunEnd> {
    await run.progress.stop();
    const { database, markers, scheduler, webhooks } = this.r.stores;
    let finished: FinishedTask | null;
    try {
      finished = await this.writer.run(
        transition,
        run.publicId,
        {
          database: () => database.finish(run.publicId, null, input, newId('delivery')),
          markers: async (f) => {
            await run.marked;
            if (f) await markers.status(f.account_id, f.public_id, f.status);
          },
          // The freed slot's next task is released before this run's job ends (BullMQ then hands it that job).
          scheduler: () => this.tell((report) => scheduler.done(run.publicId, report), run),
          webhooks: async (f) => {
            if (f?.delivery_id) await webhooks.enqueueAttempt(f.delivery_id, 1, 0, f.account_id);
          },
        },
        { waitWhileUnavailable: this.opts.shutdown, schedulerBesideMarkers: true },
      );
    } catch (err) {
      if (!(err instanceof StoppedWhileUnavailableError)) throw err;
      await this.handBack(run, 'shutdown');
      return { interrupted: true };
    }
    if (finished) this.r.onFinished?.(finished, input.status === TaskStatus.failed ? input.errorCode : undefined);
    return { finished };
  }

  /**
   * Retry: a transient engine failure spent this attempt. The task is queued again (status 0, the
   * attempt kept, the marker back to 0) and runs again after `delayMs`, still counted as running,
   * ahead of its account's other tasks; that run's claim starts the next attempt. A worker stopping
   * while PostgreSQL is unavailable leaves it released again as it is (its next run continues this
   * attempt).
   */
  async retry(run: Run, delayMs: number): Promise<void> {
    await run.progress.stop();
    const { database, markers, scheduler } = this.r.stores;
    try {
      await this.writer.run(
        'retry',
        run.publicId,
        {
          database: () => database.requeueForRetry(run.publicId, run.task.attempts),
          markers: async (requeued) => {
            await run.marked;
            if (requeued) await markers.handBack(run.accountId, run.publicId);
          },
          scheduler: () => this.tell((report) => scheduler.retryLater(run, delayMs, report), run),
        },
        { waitWhileUnavailable: this.opts.shutdown },
      );
    } catch (err) {
      if (!(err instanceof StoppedWhileUnavailableError)) throw err;
      await this.handBack(run, 'shutdown');
    }
  }

  /**
   * Hand back: queued again with the attempt given back, the marker back to 0, the scheduler
   * releasing it again at the head of its kind's queue (`busy`, `model-mismatch`: after `delayMs`;
   * only `busy` keeps the task's present wait on a busy model going, every other reason ends it).
   * A worker stopping does not wait for an unavailable store; the other reasons do, so the task runs again
   * once the dependency answers. Returns whether the database took the hand-back (false: the task
   * had moved on, or PostgreSQL could not be reached before the worker stopped: then its next run
   * continues this attempt).
   */
  async handBack(run: Run, why: HandBackReason, delayMs = 0): Promise<boolean> {
    await run.progress.stop();
    const { database, markers, scheduler } = this.r.stores;
    const stopping = why === 'shutdown';
    return this.writer.run(
      'hand back',
      run.publicId,
      {
        database: async () => {
          const write = () => database.handBack(run.publicId, run.task.attempts, why === 'busy');
          try {
            // Waited for, except by a worker stopping: then it is released again all the same.
            return stopping ? await write() : await retryWhileUnavailable(write, { signal: this.opts.shutdown });
          } catch (err) {
            // Released again all the same: its next run claims it from 10 and continues this attempt.
            if (!(err instanceof StoppedWhileUnavailableError) && !isPlatformFault(err)) throw err;
            this.r.logger.warn('hand back: PostgreSQL unavailable; released again, its next run continues this attempt', { public_id: run.publicId, error: (err as Error).message });
            return false;
          }
        },
        markers: async (handedBack) => {
          await run.marked;
          if (handedBack) await markers.handBack(run.accountId, run.publicId);
        },
        scheduler: () => this.tell((report) => (why === 'busy' || why === 'model-mismatch' ? scheduler.retryLater(run, delayMs, report) : scheduler.handBack(run, report)), run),
      },
      stopping ? {} : { waitWhileUnavailable: this.opts.shutdown },
    );
  }

  /**
   * A busy model server refused the run (at capacity, starting, not ready; docs/models.md, "A model
   * server that stays busy"). The wait is added to the task's busy time in PostgreSQL first; within
   * `timeoutMs` in all the task is handed back (`busy`: offered again after `delayMs`), past it
   * nothing is handed back and the caller fails it with `model_unavailable` (`{ timedOut }`). A task
   * that moved on meanwhile (a cancel) is handed back as `handBack` leaves it: alone.
   */
  async busy(run: Run, delayMs: number, timeoutMs: number): Promise<{ handedBack: boolean } | { timedOut: true; busyMs: number }> {
    let busyMs: number | null;
    try {
      busyMs = await this.writer.run('busy time', run.publicId, { database: () => this.r.stores.database.recordBusy(run.publicId, run.task.attempts) }, { waitWhileUnavailable: this.opts.shutdown });
    } catch (err) {
      if (!(err instanceof StoppedWhileUnavailableError)) throw err;
      return { handedBack: await this.handBack(run, 'shutdown') };
    }
    if (busyMs !== null && busyMs >= timeoutMs) return { timedOut: true, busyMs };
    return { handedBack: await this.handBack(run, 'busy', delayMs) };
  }

  /** Cancelled while running (the cancel wrote everything else): the run's end frees its slot and place. */
  async cancelled(run: Run): Promise<void> {
    await run.progress.stop();
    await this.writer.run('cancelled run', run.publicId, {
      database: async () => null,
      scheduler: () => this.tell((report) => this.r.stores.scheduler.done(run.publicId, report), run),
    });
  }

  /**
   * This worker's idle slots and the starts it has not reported yet, on their own (at least every
   * few seconds: a worker not heard from for 10 s is taken for gone).
   */
  heartbeat(): Promise<void> {
    return this.tell((report) => this.r.stores.scheduler.report(report));
  }

  /** This worker is stopping: its slots take no more work. */
  leave(): Promise<void> {
    return this.r.stores.scheduler.leave(this.opts.slots.workerId);
  }

  /** The current status of a run's task (a result that lost the race to a cancel is removed). */
  status(run: Run): Promise<number | null> {
    return this.r.stores.database.status(run.publicId);
  }
}
