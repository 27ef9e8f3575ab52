// Expire (docs/api.md, "Order, lifetime and fairness inside an account"): a task with `ttl_seconds` still queued, never started, that
// long after its creation ends as cancelled with `error_code` `expired`, refunded in full, no
// webhook. PostgreSQL decides (every replica sweeps every EXPIRY_SWEEP_MS, SKIP LOCKED, so any
// number of them agree and a Redis loss changes nothing); a worker's claim refuses a task past its
// deadline, and the scheduler never releases one (so the start wins or the expiry wins, never
// both). Then the markers and the scheduler, in batches.
import type { Logger } from '@taskapi/logger';
import { runPeriodically, type Periodic } from '@taskapi/service';
import { isTaskKind, type TaskKind } from '@taskapi/task-kinds';
import type { EndedTask, LifecycleResources } from '../stores';
import type { TransitionWriter } from '../transition';

/** How often each replica looks for tasks past their deadline: well within the 2 s promised. */
export const EXPIRY_SWEEP_MS = 500;

/** Tasks expired per statement. */
const EXPIRY_BATCH = 500;

/** The `error_message` of an expired task. */
export const EXPIRED_MESSAGE = 'The task did not start within its ttl_seconds; it was refunded.';

export class ExpireSystem {
  constructor(
    private readonly r: LifecycleResources,
    private readonly writer: TransitionWriter,
  ) {}

  /**
   * `expireDue` every EXPIRY_SWEEP_MS on this replica, until stopped (every API and worker runs
   * one: PostgreSQL decides, so no Redis lock is needed for replicas to agree).
   */
  sweepPeriodically(logger: Logger): Periodic {
    return runPeriodically({
      name: 'task expiry',
      intervalMs: EXPIRY_SWEEP_MS,
      logger,
      task: async () => {
        const expired = await this.expireDue();
        if (expired > 0) logger.info('tasks expired (not started within their ttl_seconds)', { count: expired });
      },
    });
  }

  /** Expires every task past its deadline, in batches. Returns how many it expired. */
  async expireDue(): Promise<number> {
    let total = 0;
    for (;;) {
      const expired = await this.expireBatch();
      total += expired.length;
      if (expired.length < EXPIRY_BATCH) return total;
    }
  }

  private async expireBatch(): Promise<EndedTask[]> {
    const { database, markers, scheduler } = this.r.stores;
    const expired = await this.writer.run('expire', `${EXPIRY_BATCH} due`, {
      database: () => database.expireDue(EXPIRY_BATCH, EXPIRED_MESSAGE),
      markers: (ended) => Promise.all(ended.map((t) => markers.status(t.account_id, t.public_id, t.status))),
      scheduler: (ended) => Promise.all([...byKind(ended)].map(([kind, ids]) => scheduler.cancelMany(kind, ids))),
    });
    for (const t of expired) this.r.onFinished?.({ ...t, delivery_id: null }, undefined);
    return expired;
  }
}

/** Public ids by kind. */
export function byKind(tasks: readonly Pick<EndedTask, 'kind' | 'public_id'>[]): Map<TaskKind, string[]> {
  const kinds = new Map<TaskKind, string[]>();
  for (const t of tasks) {
    if (!isTaskKind(t.kind)) continue;
    kinds.set(t.kind, [...(kinds.get(t.kind) ?? []), t.public_id]);
  }
  return kinds;
}
