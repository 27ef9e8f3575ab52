import { parseProgress, TaskStatus } from '@taskapi/domain';
import { newId } from '@taskapi/ids';
import { isTaskKind } from '@taskapi/task-kinds';
import type { CancelFilter, EndedTask, FinishedTask, LifecycleResources } from '../stores';
import type { TransitionWriter } from '../transition';
import { byKind } from './expire-system';

/** Tasks cancelled per statement (and per scheduler call) of a bulk cancel. */
export const CANCEL_BATCH = 200;

/** What became of one id of a bulk cancel. */
export type BulkOutcome = 'cancelled' | 'already_finished' | 'not_found';

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

  /**
   * Bulk cancel by ids (docs/api.md, "Cancelling many tasks"): each of the account's tasks among `publicIds`
   * still queued or processing is cancelled as the single cancel does; an id given twice is
   * cancelled once and reported for each. In batches of CANCEL_BATCH, each its own short
   * statement. Returns each id's outcome, in order, and how many were cancelled.
   */
  async cancelIds(accountId: string, publicIds: readonly string[]): Promise<{ cancelled: number; outcomes: BulkOutcome[] }> {
    const unique = [...new Set(publicIds)];
    const cancelledIds = new Set<string>();
    for (let i = 0; i < unique.length; i += CANCEL_BATCH) {
      for (const t of await this.cancelBatch(accountId, unique.slice(i, i + CANCEL_BATCH))) cancelledIds.add(t.public_id);
    }
    const known = await this.r.stores.database.statusesOf(accountId, unique.filter((id) => !cancelledIds.has(id)));
    const outcomes = publicIds.map((id): BulkOutcome => (cancelledIds.has(id) ? 'cancelled' : known.has(id) ? 'already_finished' : 'not_found'));
    return { cancelled: cancelledIds.size, outcomes };
  }

  /**
   * Bulk cancel by filter: every non-terminal task of the account matching `filter` when the
   * request came (tasks created meanwhile are not its), oldest first, CANCEL_BATCH at a time (no
   * lock or script held for long, however many match). A task that left the filter's status in
   * between (a queued one that started) is not cancelled. Returns how many it cancelled.
   */
  async cancelMatching(accountId: string, filter: CancelFilter): Promise<number> {
    const { database } = this.r.stores;
    const upTo = await database.newestTaskId();
    const statuses = filter.status === undefined ? [TaskStatus.queued, TaskStatus.processing] : [filter.status];
    let cancelled = 0;
    let after: string | null = null;
    for (;;) {
      const page = await database.cancelCandidates(accountId, filter, after, CANCEL_BATCH, upTo);
      if (page.length === 0) return cancelled;
      cancelled += (await this.cancelBatch(accountId, page.map((t) => t.public_id), statuses)).length;
      after = page[page.length - 1]!.id;
      if (page.length < CANCEL_BATCH) return cancelled;
    }
  }

  /** One batch: PostgreSQL, then the markers, the scheduler, the predictions, as the single cancel. */
  private async cancelBatch(accountId: string, publicIds: readonly string[], statuses?: readonly number[]): Promise<EndedTask[]> {
    const { database, markers, scheduler, predictions } = this.r.stores;
    // The progress each had reached (running ones), kept as theirs; without Redis, none.
    const progress = await Promise.all(publicIds.map((id) => markers.storedProgress(accountId, id).then(parseProgress, () => null)));
    const cancelled = await this.writer.run(`cancel (${publicIds.length})`, publicIds[0] ?? '', {
      database: () => database.cancelMany(accountId, publicIds, progress, statuses),
      markers: (ended) => Promise.all(ended.map((t) => markers.status(t.account_id, t.public_id, t.status))),
      scheduler: (ended) => Promise.all([...byKind(ended)].map(([kind, ids]) => scheduler.cancelMany(kind, ids))),
      predictions: (ended) => Promise.all(ended.flatMap((t) => (isTaskKind(t.kind) ? [predictions.abandon(t.kind, t.public_id)] : []))),
    });
    for (const t of cancelled) this.r.onFinished?.({ ...t, delivery_id: null }, undefined);
    return cancelled;
  }
}
