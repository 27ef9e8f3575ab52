import { TaskStatus } from '@taskapi/domain';
import type { TaskKind } from '@taskapi/task-kinds';
import { jobOutcome, taskJobId, type TaskQueues } from '@taskapi/queue';
import type { TaskScheduler } from '@taskapi/scheduler';
import { pendingTasksPage, stillPending, type PendingTaskRow } from '../repositories/tasks';
import { finishAndAnnounce, type AnnounceDeps } from './finish-and-announce';
import { INTERNAL_ERROR_MESSAGE } from './failure-message';

export interface SweepTasksDeps extends AnnounceDeps {
  taskQueues: TaskQueues;
  scheduler: TaskScheduler;
  /** A task it failed may have left a prediction on a model server: cancelled, since nobody will read it. */
  abandonPrediction?: (publicId: string) => Promise<void>;
}

export interface SweepResult {
  /** Pending tasks Redis had lost (or never heard of) given back to the scheduler, or whose released job was added again. */
  requeued: number;
  /** Tasks whose job had ended for good without a terminal status: failed with a refund. */
  failed: number;
  /** Tasks counted as running whose end was never reported (they are terminal): their places freed. */
  released: number;
}

const BATCH = 1000;

/**
 * Makes the database the truth about pending work of one kind:
 * - every task still queued or processing after `graceMs` is known to the scheduler, and when it
 *   is released, its job exists: a task Redis lost goes back to its account's line (restored
 *   fairly, in creation order), a released task's missing job is added again (same job id, so this
 *   is idempotent), and a job that BullMQ finished without a terminal status (failed after its
 *   attempts, or a worker crash it could not recover) ends the task with `internal_error` and a
 *   refund;
 * - every task the scheduler counts as running is still pending: one that ended without the
 *   scheduler hearing of it (a worker lost between the two, a worker of an earlier release) frees
 *   its place.
 */
export async function sweepTasks(deps: SweepTasksDeps, kind: TaskKind, graceMs: number, batchSize = BATCH): Promise<SweepResult> {
  const result: SweepResult = { requeued: 0, failed: 0, released: 0 };
  const queue = deps.taskQueues.queues[kind];
  const fail = async (publicId: string) => {
    const finished = await finishAndAnnounce(deps, publicId, { status: TaskStatus.failed, errorCode: 'internal_error', errorMessage: INTERNAL_ERROR_MESSAGE });
    await deps.scheduler.done(publicId);
    await deps.abandonPrediction?.(publicId);
    if (finished) result.failed++;
  };
  // Keyset pages over the whole backlog: a page of live jobs must not hide missing ones behind it.
  let after: { createdAt: Date; id: string } | null = null;
  for (;;) {
    const rows = await pendingTasksPage(deps.db, kind, graceMs, after, batchSize);
    const records = await deps.scheduler.lookup(rows.map((r) => r.public_id));
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
        await fail(row.public_id);
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
        // (a hand-back) was lost. Released again, keeping its place.
        await deps.scheduler.handBack({ kind, publicId: row.public_id, accountId: row.account_id, order: row.id, createdAt: row.created_at, release: record.release });
        result.requeued++;
      }
    }
    if (lost.length > 0) {
      const tasks = lost.map(({ row, releasesUsed }) => ({ publicId: row.public_id, accountId: row.account_id, order: row.id, createdAt: row.created_at, releasesUsed }));
      result.requeued += await deps.scheduler.submit(kind, tasks);
    }
    if (retaken.length > 0) {
      await deps.taskQueues.addRuns(
        kind,
        retaken.map((row) => ({ publicId: row.public_id, accountId: row.account_id, release: records.get(row.public_id)!.release })),
      );
      result.requeued += retaken.length;
    }
    const last: PendingTaskRow | undefined = rows[rows.length - 1];
    if (!last || rows.length < batchSize) break;
    after = { createdAt: last.created_at, id: last.id };
  }
  result.released = await releaseEnded(deps, kind);
  return result;
}

/**
 * Frees the places of tasks the scheduler counts as running that have ended (or do not exist) and
 * that no worker holds any more: a task cancelled while its engine runs keeps its place until its
 * worker lets go of it (that worker tells the scheduler). Then rebuilds the running counts from
 * what is in service, which repairs counts a lost report or a corrupt entry left behind.
 */
async function releaseEnded(deps: SweepTasksDeps, kind: TaskKind): Promise<number> {
  const ids = await deps.scheduler.inService(kind);
  let freed = 0;
  if (ids.length > 0) {
    const pending = await stillPending(deps.db, ids);
    const ended = ids.filter((id) => !pending.has(id));
    const records = await deps.scheduler.lookup(ended);
    for (const id of ended) {
      const record = records.get(id);
      const outcome = record ? (await jobOutcome(deps.taskQueues.queues[kind], taskJobId(id, record.release))).outcome : 'missing';
      if (outcome === 'pending') continue;
      await deps.scheduler.done(id);
      freed++;
    }
  }
  await deps.scheduler.recount();
  return freed;
}
