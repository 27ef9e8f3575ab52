import { Queue } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { perTaskKind, type TaskKind } from '@taskapi/task-kinds';
import { TASK_QUEUES, taskJobId, type TaskJob } from './catalog';

export interface TaskQueues {
  queues: Readonly<Record<TaskKind, Queue<TaskJob>>>;
  /** Adds tasks' jobs of one kind in one Redis round trip (idempotent: job id = public id). */
  enqueueMany(kind: TaskKind, publicIds: readonly string[]): Promise<void>;
}

/** Producer-side queues of every task kind, sharing one Redis connection. */
export function createTaskQueues(connection: Redis | Cluster): TaskQueues {
  const queues = perTaskKind((_definition, kind) => {
    const def = TASK_QUEUES[kind];
    return withConnectionErrorsLoggedElsewhere(new Queue<TaskJob>(def.name, { connection, defaultJobOptions: def.defaultJobOptions }));
  });
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
