import { parseTaskFinished, TASK_FINISHED_CHANNEL, TaskStatus } from '@taskapi/domain';
import { TaskCancelled } from '@taskapi/engines';
import { PubSubFanout, type RedisClient } from '@taskapi/service';
import type { Logger } from '@taskapi/logger';

/** One run's registration: its signal aborts (with `TaskCancelled`) when the task is cancelled. */
export interface RunningTask {
  signal: AbortSignal;
  /** The run is over (idempotent). */
  end(): void;
}

/**
 * The tasks this process runs, so a cancel reaches the engine running it: a cancel on any API
 * replica publishes the task's terminal event (TASK_FINISHED_CHANNEL, beside its status marker),
 * every worker hears it on its pub/sub connection, and the one running the task aborts it. After a
 * reconnect (events meanwhile are lost) the database says which of them were cancelled.
 */
export class RunningTasks {
  private readonly runs = new Map<string, Set<AbortController>>();

  constructor(
    private readonly fanout: PubSubFanout,
    /** The task's status in PostgreSQL, when a cancel may have been missed. */
    private readonly statusOf: (publicId: string) => Promise<number | null>,
    private readonly logger: Logger,
  ) {}

  /** Fan-out of TASK_FINISHED_CHANNEL by task, for `RunningTasks`. */
  static fanout(subscriber: RedisClient, logger: Logger): PubSubFanout {
    return new PubSubFanout(subscriber, [TASK_FINISHED_CHANNEL], (_channel, message) => parseTaskFinished(message)?.publicId ?? null, logger);
  }

  add(publicId: string): RunningTask {
    const controller = new AbortController();
    const set = this.runs.get(publicId) ?? new Set();
    set.add(controller);
    this.runs.set(publicId, set);
    const stop = this.fanout.listen(publicId, (event) => {
      if (event.kind === 'message') {
        if (parseTaskFinished(event.message)?.status === TaskStatus.cancelled) controller.abort(new TaskCancelled());
        return;
      }
      // Resubscribed after a reconnect: a cancel may have been missed.
      this.statusOf(publicId).then(
        (status) => {
          if (status === TaskStatus.cancelled) controller.abort(new TaskCancelled());
        },
        (err: unknown) => this.logger.warn('could not check whether a running task was cancelled', { public_id: publicId, error: (err as Error).message }),
      );
    });
    return {
      signal: controller.signal,
      end: () => {
        stop();
        set.delete(controller);
        if (set.size === 0 && this.runs.get(publicId) === set) this.runs.delete(publicId);
      },
    };
  }

  /** Whether this process runs the task now. */
  has(publicId: string): boolean {
    return this.runs.has(publicId);
  }

  /** Runs in progress (for tests and shutdown logs). */
  get size(): number {
    let n = 0;
    for (const set of this.runs.values()) n += set.size;
    return n;
  }
}
