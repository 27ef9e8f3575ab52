import { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { TASK_KINDS, type TaskKind } from '@taskapi/domain';
import { TASK_QUEUES, taskJobId, type TaskJob } from './catalog';

export interface TaskQueues {
  queues: Readonly<Record<TaskKind, Queue<TaskJob>>>;
  /** Adds tasks' jobs of one kind in one Redis round trip (idempotent: job id = public id). */
  enqueueMany(kind: TaskKind, publicIds: readonly string[]): Promise<void>;
}

/** Producer-side queues of every task kind, sharing one Redis connection. */
export function createTaskQueues(connection: Redis): TaskQueues {
  const queues = Object.fromEntries(
    TASK_KINDS.map((kind) => {
      const def = TASK_QUEUES[kind];
      return [kind, new Queue<TaskJob>(def.name, { connection, defaultJobOptions: def.defaultJobOptions })];
    }),
  ) as Record<TaskKind, Queue<TaskJob>>;
  return {
    queues,
    async enqueueMany(kind, publicIds) {
      const schema = TASK_QUEUES[kind].schema;
      await queues[kind].addBulk(
        publicIds.map((publicId) => ({ name: kind, data: schema.parse({ public_id: publicId }), opts: { jobId: taskJobId(publicId) } })),
      );
    },
  };
}

export async function closeQueues(queues: Iterable<Queue>): Promise<void> {
  await Promise.all([...queues].map((q) => q.close()));
}
