import { TaskStatus, type TaskKind } from '@taskapi/domain';
import { jobOutcome, type TaskQueues } from '@taskapi/queue';
import { finishAndAnnounce, type AnnounceDeps } from './finish-and-announce';
import { INTERNAL_ERROR_MESSAGE } from './failure-message';

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

interface PendingTaskRow {
  id: string;
  public_id: string;
  kind: TaskKind;
  created_at: Date;
}

/**
 * Makes the database the truth about pending work: every task of `kinds` still queued or
 * processing after `graceMs` must have a live job. A missing job is added again (same job id, so
 * this is idempotent); a job that BullMQ has already finished (failed after its attempts, or a
 * worker crash it could not recover) ends the task with `internal_error` and a refund.
 */
export async function sweepTasks(
  deps: SweepTasksDeps,
  kinds: readonly TaskKind[],
  graceMs: number,
  batchSize = BATCH,
): Promise<SweepResult> {
  const result: SweepResult = { requeued: 0, failed: 0 };
  // Keyset pages over the whole backlog: a page of live jobs must not hide missing ones behind it.
  let after: { createdAt: Date; id: string } | null = null;
  for (;;) {
    const page = await deps.db.query<PendingTaskRow>({
      name: 'worker-sweep-tasks',
      text: `SELECT id::text AS id, public_id, kind::text AS kind, created_at FROM tasks
              WHERE finished_at IS NULL AND status IN (0, 10) AND created_at < now() - make_interval(secs => $2::float8 / 1000)
                AND kind::text = ANY($1::text[])
                AND ($3::timestamptz IS NULL OR (created_at, id) > ($3::timestamptz, $4::bigint))
              ORDER BY created_at, id LIMIT $5`,
      values: [kinds, graceMs, after?.createdAt ?? null, after?.id ?? null, batchSize],
    });
    const rows: PendingTaskRow[] = page.rows;
    const missing = new Map<TaskKind, string[]>();
    // A page's lookups at once (auto-pipelined), each constant work in Redis (see jobOutcome).
    const outcomes = await Promise.all(rows.map((row) => jobOutcome(deps.taskQueues.queues[row.kind], row.public_id)));
    for (const [i, row] of rows.entries()) {
      const { outcome } = outcomes[i]!;
      if (outcome === 'missing') {
        missing.set(row.kind, [...(missing.get(row.kind) ?? []), row.public_id]);
      } else if (outcome === 'failed' || outcome === 'completed') {
        const finished = await finishAndAnnounce(deps, row.public_id, { status: TaskStatus.failed, errorCode: 'internal_error', errorMessage: INTERNAL_ERROR_MESSAGE });
        if (finished) result.failed++;
      }
    }
    for (const [kind, ids] of missing) {
      await deps.taskQueues.enqueueMany(kind, ids);
      result.requeued += ids.length;
    }
    const last: PendingTaskRow | undefined = rows[rows.length - 1];
    if (!last || rows.length < batchSize) return result;
    after = { createdAt: last.created_at, id: last.id };
  }
}
