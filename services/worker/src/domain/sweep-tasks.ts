import { TaskStatus, type TaskKind } from '@taskapi/domain';
import type { TaskQueues } from '@taskapi/queue';
import { finishAndAnnounce, type AnnounceDeps } from './finish-and-announce';

export interface SweepTasksDeps extends AnnounceDeps {
  taskQueues: TaskQueues;
}

export interface SweepResult {
  /** Tasks whose job was missing (Redis lost it, or the API crashed before enqueueing) and was added again. */
  requeued: number;
  /** Tasks whose job had ended for good without a terminal status: failed with a refund. */
  failed: number;
}

const BATCH = 1000;

/**
 * Makes the database the truth about pending work: every task of `kinds` still queued or
 * processing after `graceMs` must have a live job. A missing job is added again (same job id, so
 * this is idempotent); a job that BullMQ has already finished (failed after its attempts, or a
 * worker crash it could not recover) ends the task with `internal_error` and a refund.
 */
export async function sweepTasks(deps: SweepTasksDeps, kinds: readonly TaskKind[], graceMs: number): Promise<SweepResult> {
  const { rows } = await deps.db.query<{ public_id: string; kind: TaskKind }>({
    name: 'worker-sweep-tasks',
    text: `SELECT public_id, kind::text AS kind FROM tasks
            WHERE status IN (0, 10) AND created_at < now() - make_interval(secs => $2::float8 / 1000)
              AND kind::text = ANY($1::text[])
            ORDER BY created_at LIMIT ${BATCH}`,
    values: [kinds, graceMs],
  });
  const missing = new Map<TaskKind, string[]>();
  let failed = 0;
  for (const row of rows) {
    const state = await deps.taskQueues.queues[row.kind].getJobState(row.public_id);
    if (state === 'unknown') {
      missing.set(row.kind, [...(missing.get(row.kind) ?? []), row.public_id]);
    } else if (state === 'failed' || state === 'completed') {
      const finished = await finishAndAnnounce(deps, row.public_id, { status: TaskStatus.failed, errorCode: 'internal_error' });
      if (finished) failed++;
    }
  }
  let requeued = 0;
  for (const [kind, ids] of missing) {
    await deps.taskQueues.enqueueMany(kind, ids);
    requeued += ids.length;
  }
  return { requeued, failed };
}
