import type { Logger } from '@taskapi/logger';
import { isPlatformFault, retryWhileUnavailable } from '@taskapi/service';

/**
 * The stores a task's state lives in, in the one order every transition writes them
 * (docs/architecture.md, "A task's life"):
 * 1. `database`: PostgreSQL, the truth (the task row, the ledger, the webhook outbox). Its commit
 *    is the transition; everything after it only reports it.
 * 2. `markers`: the task's status marker, progress and events in Redis, before anyone can hear of
 *    the change another way (API replicas check their cached rows against the marker).
 * 3. `scheduler`: the task's place in the fair scheduler (Redis), and the BullMQ jobs it releases.
 * 4. `webhooks`: the first attempt's job of the delivery the transition wrote.
 * 5. `predictions`: a model prediction nobody will read any more, cancelled and forgotten.
 */
export const STORE_ORDER = ['database', 'markers', 'scheduler', 'webhooks', 'predictions'] as const;
export type StoreName = (typeof STORE_ORDER)[number];

/** Who repairs each store when its write after the commit fails, for the warning that says so. */
const REPAIRED_BY: Record<Exclude<StoreName, 'database'>, string> = {
  markers: 'readers go to PostgreSQL within 5 s',
  scheduler: 'the task sweeper repairs the scheduler',
  webhooks: "the dispatcher's sweeper sends the webhook",
  predictions: 'the prediction record expires, and the model server ends the prediction on its own',
};

/**
 * One transition's writes: the database step returns what it committed (null when there was
 * nothing to do: the task had moved on), and each later step receives it.
 */
export type TransitionSteps<C> = { database: () => Promise<C> } & Partial<Record<Exclude<StoreName, 'database'>, (committed: C) => Promise<unknown>>>;

export interface TransitionOptions {
  /**
   * Wait out PostgreSQL and Redis outages, failovers and read-only standbys at every step until
   * this aborts (a worker holding a finished run: its result must not be lost to the platform's own
   * faults). Without it, a failed step is not waited for.
   */
  waitWhileUnavailable?: AbortSignal;
  /**
   * Start the scheduler's step beside the markers' instead of after it, the webhook job still
   * waiting for both. Only for a run's terminal end: its marker is final, and its scheduler step
   * concerns other tasks (the freed slot's next one), so neither write can overtake the other's
   * meaning, and a run's cycle (end → next task released) keeps one Redis round trip instead of two.
   * A hand-back or retry must not: the scheduler could run the task again before its marker moved back.
   */
  schedulerBesideMarkers?: boolean;
}

/**
 * Runs transitions in STORE_ORDER. The database step's failure is the caller's (nothing was
 * written: the caller answers 503, hands the run back, or leaves it to the sweeper). A later
 * step's failure is logged and the next step still runs: the transition is committed, and what a
 * failed step did not write is repaired where REPAIRED_BY says.
 */
export class TransitionWriter {
  constructor(private readonly logger: Pick<Logger, 'warn'>) {}

  async run<C>(transition: string, publicId: string, steps: TransitionSteps<C>, opts: TransitionOptions = {}): Promise<C> {
    const wait = opts.waitWhileUnavailable;
    const attempt = <T>(work: () => Promise<T>): Promise<T> =>
      wait
        ? retryWhileUnavailable(work, {
            signal: wait,
            onFailure: (err, failures) => {
              if (failures === 1 && isPlatformFault(err)) this.logger.warn(`${transition}: waiting for a store to answer`, { public_id: publicId, error: (err as Error).message });
            },
          })
        : work();
    const committed = await attempt(steps.database);
    const write = async (store: Exclude<StoreName, 'database'>): Promise<void> => {
      const step = steps[store];
      if (!step) return;
      try {
        await attempt(() => step(committed));
      } catch (err) {
        this.logger.warn(`${transition}: ${store} not written; ${REPAIRED_BY[store]}`, { public_id: publicId, error: (err as Error).message });
      }
    };
    if (opts.schedulerBesideMarkers) await Promise.all([write('markers'), write('scheduler')]);
    else {
      await write('markers');
      await write('scheduler');
    }
    await write('webhooks');
    await write('predictions');
    return committed;
  }
}
