import { parseProgress, TaskStatus } from '@taskapi/domain';
import { newId } from '@taskapi/ids';
import { isTaskKind } from '@taskapi/task-kinds';
import type { FinishedTask, LifecycleResources } from '../stores';
import type { TransitionWriter } from '../transition';

/**
 * Cancel (docs/api.md): status 40 with a full refund and no webhook, in one statement; then the
 * marker (every worker hears it, and the one running the task stops its engine), the task's place
 * in the scheduler (its line, or its released job), and a prediction it left on a model server.
 */
export class CancelSystem {
  constructor(
    private readonly r: LifecycleResources,
    private readonly writer: TransitionWriter,
  ) {}

  /**
   * Cancels the account's task if it is queued or processing. Null when it is unknown or already
   * terminal (two racing cancels: one wins, the refund happens once). PostgreSQL unavailable:
   * thrown, nothing changed.
   */
  async cancel(accountId: string, publicId: string): Promise<FinishedTask | null> {
    const { database, markers, scheduler, predictions } = this.r.stores;
    // The progress it had reached is kept as the task's; without Redis, none is.
    const progress = parseProgress(await markers.storedProgress(accountId, publicId).catch(() => null));
    const finished = await this.writer.run('cancel', publicId, {
      database: () => database.finish(publicId, accountId, { status: TaskStatus.cancelled, progress }, newId('delivery')),
      markers: async (f) => {
        if (f) await markers.status(f.account_id, f.public_id, f.status);
      },
      scheduler: async (f) => {
        if (f && isTaskKind(f.kind)) await scheduler.cancel(f.kind, publicId);
      },
      predictions: async (f) => {
        if (f && isTaskKind(f.kind)) await predictions.abandon(f.kind, publicId);
      },
    });
    if (finished) this.r.onFinished?.(finished, undefined);
    return finished;
  }
}
