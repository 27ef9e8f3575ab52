import type { Queue } from 'bullmq';
import type { RedisClient } from '@taskapi/service';
import type { TaskKind } from '@taskapi/domain';
import type { Logger } from '@taskapi/logger';

/** What one task queue looks like to an autoscaler. */
export interface QueueSignal {
  /** Jobs a worker could pick up now: `wait` + `prioritized` (+ `paused`). Delayed retries are not counted. */
  depth: number;
  /** Age of the job at the head of the wait list (the next one a worker takes), 0 when none waits. */
  oldestWaitingSeconds: number;
}

// One round trip per queue, atomic, and by Redis's clock, so every API replica reports the same
// numbers. The job hash shares the queue's hash tag, so the script stays in one cluster slot.
// BullMQ pushes new jobs on the left of `wait` and workers take them from the right.
const READ_SIGNAL = `
local depth = redis.call('LLEN', KEYS[1]) + redis.call('ZCARD', KEYS[2]) + redis.call('LLEN', KEYS[3])
local oldest = redis.call('LINDEX', KEYS[1], -1)
local ageMs = 0
if oldest then
  local ts = tonumber(redis.call('HGET', ARGV[1] .. oldest, 'timestamp'))
  if ts then
    local now = redis.call('TIME')
    ageMs = math.max(0, tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) - ts)
  end
end
return {depth, ageMs}`;

/**
 * Reads every task queue's depth and oldest waiting age at scrape time. A queue that cannot be read
 * (Redis down or slow) is left out and logged: a scrape reports what is known and never fails.
 */
export function queueSignalReader(
  redis: RedisClient,
  queues: Readonly<Record<TaskKind, Queue>>,
  logger: Logger,
): () => Promise<Map<TaskKind, QueueSignal>> {
  return async () => {
    const entries = Object.entries(queues) as [TaskKind, Queue][];
    const results = await Promise.allSettled(
      entries.map(async ([, queue]) => {
        const [depth, ageMs] = (await redis.eval(READ_SIGNAL, 3, queue.toKey('wait'), queue.toKey('prioritized'), queue.toKey('paused'), queue.toKey(''))) as [
          number,
          number,
        ];
        return { depth, oldestWaitingSeconds: ageMs / 1000 };
      }),
    );
    const signals = new Map<TaskKind, QueueSignal>();
    results.forEach((result, i) => {
      const kind = entries[i]![0];
      if (result.status === 'fulfilled') signals.set(kind, result.value);
      else logger.warn('queue signals not read; left out of this scrape', { kind, error: (result.reason as Error).message });
    });
    return signals;
  };
}
