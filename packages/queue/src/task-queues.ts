import { Queue } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { perTaskKind, type TaskKind } from '@taskapi/task-kinds';
import { TASK_QUEUES, taskJobId, type TaskJob } from './catalog';

/** One run of a task to add to its kind's queue. */
export interface TaskRun {
  publicId: string;
  accountId: string;
  /** Which release of the task (1 = first); it makes the job id. */
  release: number;
  /** Wait before the job may run, in ms (default 0). */
  delayMs?: number;
  /** To the head of the queue, the next a worker takes (a task that keeps its place). */
  front?: boolean;
}

export interface TaskQueues {
  queues: Readonly<Record<TaskKind, Queue<TaskJob>>>;
  /** Adds runs of one kind in one Redis round trip (idempotent: the job id is the task's and the release's). */
  addRuns(kind: TaskKind, runs: readonly TaskRun[]): Promise<void>;
  /** Removes a run's job unless a worker holds it; true when it is gone. */
  removeRun(kind: TaskKind, publicId: string, release: number): Promise<boolean>;
}

/** Producer-side queues of every task kind, sharing one Redis connection. */
export function createTaskQueues(connection: Redis | Cluster): TaskQueues {
  const queues = perTaskKind((_definition, kind) => {
    const def = TASK_QUEUES[kind];
    return withConnectionErrorsLoggedElsewhere(
      new Queue<TaskJob>(def.name, { connection, defaultJobOptions: def.defaultJobOptions }),
    );
  });
  return {
    queues,
    async addRuns(kind, runs) {
      const schema = TASK_QUEUES[kind].schema;
      const jobs = runs.map((run) => ({
        name: kind,
        data: schema.parse({ public_id: run.publicId, account_id: run.accountId, release: run.release }),
        opts: { jobId: taskJobId(run.publicId, run.release), ...(run.delayMs ? { delay: run.delayMs } : {}), ...(run.front ? { lifo: true } : {}) },
      }));
      // One job (a freed slot's next task, the usual case) without addBulk's MULTI.
      if (jobs.length === 1) await queues[kind].add(jobs[0]!.name, jobs[0]!.data, jobs[0]!.opts);
      else if (jobs.length > 1) await queues[kind].addBulk(jobs);
    },
    async removeRun(kind, publicId, release) {
      return (await queues[kind].remove(taskJobId(publicId, release))) === 1;
    },
  };
}

/**
 * A producer queue re-emits its connection's errors as `error` events, and BullMQ prints them to
 * stderr (bypassing our JSON logs) when nobody listens. The connection is the caller's, and its
 * own `error` listener logs each failure once; failed commands still reject their promises.
 */
export function withConnectionErrorsLoggedElsewhere<Q extends Queue>(queue: Q): Q {
  queue.on('error', () => undefined);
  return queue;
}

export async function closeQueues(queues: Iterable<Queue>): Promise<void> {
  await Promise.all([...queues].map((q) => q.close()));
}
