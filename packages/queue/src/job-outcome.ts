import type { Job, Queue } from 'bullmq';

/**
 * Where a job stands, as the sweepers need it: gone (Redis lost it, or it was never added), ended
 * for good (completed, or failed after its attempts), or still to run (waiting, delayed, active).
 */
export type JobOutcome = { outcome: 'missing' } | { outcome: 'completed' | 'failed' | 'pending'; job: Job };

/**
 * A job's outcome (with the job, when it exists) in constant Redis work: its hash, then two sorted-set lookups. Not BullMQ's
 * `getState`/`getJobState`, which look for the id in the waiting and active lists with LPOS, a
 * scan of the list: a sweeper asking that of every task in a backlog of N waiting jobs made Redis
 * do O(N²) work each sweep (345 µs per LPOS in a 50,000-job list, about 20 s of Redis blocked for
 * everyone, every SWEEPER_INTERVAL_MS).
 */
export async function jobOutcome(queue: Queue, jobId: string): Promise<JobOutcome> {
  const job = await queue.getJob(jobId);
  if (!job) return { outcome: 'missing' };
  const [completed, failed] = await Promise.all([job.isCompleted(), job.isFailed()]);
  return { outcome: completed ? 'completed' : failed ? 'failed' : 'pending', job };
}
