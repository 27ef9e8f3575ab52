// Repair (the task sweeper, docs/architecture.md, "A task's life"): PostgreSQL is the truth, and
// whatever a transition could not write after its commit, or a lost Redis forgot, is put back from
// it. Also the end of a task no run follows any more (its job gave up).
import { INTERNAL_ERROR_MESSAGE, TaskStatus, type TaskErrorCode } from '@taskapi/domain';
import { newId } from '@taskapi/ids';
import { jobOutcome, taskJobId } from '@taskapi/queue';
import { isTaskKind, type TaskKind } from '@taskapi/task-kinds';
import type { FinishedTask, FinishTaskInput, LifecycleResources, PendingTaskRow } from '../stores';
import type { TransitionWriter } from '../transition';

export interface SweepResult {
  /** Pending tasks Redis had lost (or never heard of) given back to the scheduler, or whose released job was added again. */
  requeued: number;
  /** Tasks whose job had ended for good without a terminal status: failed with a refund. */
  failed: number;
  /** Tasks counted as running whose end was never reported (they are terminal): their places freed. */
  released: number;
}

const BATCH = 1000;

export class RepairSystem {
  constructor(
    private readonly r: LifecycleResources,
    private readonly writer: TransitionWriter,
  ) {}

  /**
   * A task ends without a run following it (its job gave up after worker crashes; tests playing a
   * worker): the terminal statement, its marker, its place freed, its webhook job, and a prediction
   * it left abandoned. Null when it was already terminal (or unknown for `accountId`).
   */
  async end(publicId: string, input: FinishTaskInput, accountId: string | null = null): Promise<FinishedTask | null> {
    const { database, markers, scheduler, webhooks, predictions } = this.r.stores;
    const finished = await this.writer.run('end', publicId, {
      database: () => database.finish(publicId, accountId, input, newId('delivery')),
      markers: async (f) => {
        if (f) await markers.status(f.account_id, f.public_id, f.status);
      },
      scheduler: () => scheduler.done(publicId),
      webhooks: async (f) => {
        if (f?.delivery_id) await webhooks.enqueueAttempt(f.delivery_id, 1, 0, f.account_id);
      },
      predictions: async (f) => {
        if (f && isTaskKind(f.kind)) await predictions.abandon(f.kind, publicId);
      },
    });
    if (finished) this.r.onFinished?.(finished, input.status === TaskStatus.failed ? input.errorCode : undefined);
    return finished;
  }

  /** A task whose job ended for good before the task did: failed with `internal_error`, refunded. */
  async giveUp(kind: TaskKind, publicId: string): Promise<FinishedTask | null> {
    const errorCode: TaskErrorCode = 'internal_error';
    const finished = await this.end(publicId, { status: TaskStatus.failed, errorCode, errorMessage: INTERNAL_ERROR_MESSAGE });
    // Ended by whoever else: a prediction its runs left is read by nobody now.
    if (!finished) await this.r.stores.predictions.abandon(kind, publicId).catch((err: unknown) => this.r.logger.warn('give up: predictions not written', { public_id: publicId, error: (err as Error).message }));
    return finished;
  }

  /**
   * A reader found no marker for a task it read from PostgreSQL (Redis lost it): seeded from the
   * row. NX, so a writer's newer status always wins over a reader's.
   */
  seedMarker(accountId: string, publicId: string, status: number): Promise<void> {
    return this.r.stores.markers.seed(accountId, publicId, status);
  }

  /**
   * Makes the database the truth about pending work of one kind:
   * - every task still queued or processing after `graceMs` is known to the scheduler, and when it
   *   is released, its job exists: a task Redis lost goes back to its account's line (restored
   *   fairly, in creation order), a released task's missing job is added again (same job id, so
   *   this is idempotent), and a job that BullMQ finished without a terminal status (failed after
   *   its attempts, or a worker crash it could not recover) ends the task with `internal_error` and
   *   a refund;
   * - every task the scheduler counts as running is still pending: one that ended without the
   *   scheduler hearing of it (a worker lost between the two, a worker of an earlier release) frees
   *   its place.
   */
  async sweep(kind: TaskKind, graceMs: number, batchSize = BATCH): Promise<SweepResult> {
    const { database, scheduler, queues } = this.r.stores;
    const result: SweepResult = { requeued: 0, failed: 0, released: 0 };
    const queue = queues.queues[kind];
    // Keyset pages over the whole backlog: a page of live jobs must not hide missing ones behind it.
    let after: { createdAt: Date; id: string } | null = null;
    for (;;) {
      const rows = await database.pendingPage(kind, graceMs, after, batchSize);
      const records = await scheduler.lookup(rows.map((r) => r.public_id));
      // The job each task should have: its current release's (or, unknown to the scheduler, the first,
      // as releases before the scheduler queued it). A page's lookups at once (auto-pipelined), each
      // constant work in Redis (see jobOutcome).
      const expected = rows.map((row) => {
        const record = records.get(row.public_id);
        if (record && (record.state === 'pending' || record.state === 'delayed')) return undefined;
        return record ? record.release : 1;
      });
      const outcomes = await Promise.all(rows.map((row, i) => (expected[i] === undefined ? undefined : jobOutcome(queue, taskJobId(row.public_id, expected[i])))));
      const lost: Array<{ row: PendingTaskRow; releasesUsed: number }> = [];
      const retaken: PendingTaskRow[] = [];
      for (const [i, row] of rows.entries()) {
        const outcome = outcomes[i]?.outcome;
        // Waiting in its line, or its job is still to run.
        if (outcome === undefined || outcome === 'pending') continue;
        if (outcome === 'failed') {
          if (await this.giveUp(kind, row.public_id)) result.failed++;
          continue;
        }
        const record = records.get(row.public_id);
        if (!record) {
          // Unknown to the scheduler: Redis lost it, or the API stopped between commit and enqueue.
          // A first job that ran to its end without ending the task leaves release 1 taken.
          lost.push({ row, releasesUsed: outcome === 'completed' ? 1 : 0 });
        } else if (outcome === 'missing') {
          retaken.push(row);
        } else {
          // Released and its job completed, yet still pending: the run's report to the scheduler
          // (a hand-back, a retry, or the end of a run interrupted by a worker stopping during an
          // outage) was lost. Released again, keeping its place.
          await scheduler.handBack({ kind, publicId: row.public_id, accountId: row.account_id, release: record.release });
          result.requeued++;
        }
      }
      if (lost.length > 0) {
        // Restored in their places: by order, priority, deadline and fairness key, as created.
        const tasks = lost.map(({ row, releasesUsed }) => ({
          publicId: row.public_id,
          accountId: row.account_id,
          order: row.id,
          createdAt: row.created_at,
          releasesUsed,
          priority: row.priority,
          expiresAt: row.expires_at,
          fairnessKey: row.fairness_key,
        }));
        result.requeued += await scheduler.submit(kind, tasks);
      }
      if (retaken.length > 0) {
        await queues.addRuns(
          kind,
          retaken.map((row) => ({ publicId: row.public_id, accountId: row.account_id, release: records.get(row.public_id)!.release })),
        );
        result.requeued += retaken.length;
      }
      const last: PendingTaskRow | undefined = rows[rows.length - 1];
      if (!last || rows.length < batchSize) break;
      after = { createdAt: last.created_at, id: last.id };
    }
    result.released = await this.releaseEnded(kind);
    return result;
  }

  /**
   * Frees the places of tasks the scheduler counts as running that have ended (or do not exist) and
   * that no worker holds any more: a task cancelled while its engine runs keeps its place until its
   * worker lets go of it (that worker tells the scheduler). Then rebuilds the running counts from
   * what is in service, which repairs counts a lost report or a corrupt entry left behind.
   */
  private async releaseEnded(kind: TaskKind): Promise<number> {
    const { database, scheduler, queues } = this.r.stores;
    const ids = await scheduler.inService(kind);
    let freed = 0;
    if (ids.length > 0) {
      const pending = await database.stillPending(ids);
      const ended = ids.filter((id) => !pending.has(id));
      const records = await scheduler.lookup(ended);
      for (const id of ended) {
        const record = records.get(id);
        const outcome = record ? (await jobOutcome(queues.queues[kind], taskJobId(id, record.release))).outcome : 'missing';
        if (outcome === 'pending') continue;
        await scheduler.done(id);
        freed++;
      }
    }
    await scheduler.recount();
    return freed;
  }
}

