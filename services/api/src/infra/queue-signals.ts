import type { Queue } from 'bullmq';
import type { RedisClient } from '@taskapi/service';
import type { TaskKind } from '@taskapi/task-kinds';
import type { Logger } from '@taskapi/logger';
import type { KindLoad, TaskScheduler } from '@taskapi/scheduler';

/** What one task kind looks like to an autoscaler (docs/fair-scheduling.md). */
export interface QueueSignal {
  /**
   * Tasks a worker could start now: jobs in the kind's queue (`wait` + `prioritized` + `paused`:
   * released by the scheduler, or queued by an earlier release) and tasks waiting in their
   * accounts' lines that their cap lets run. Retries waiting out their delay are not counted.
   */
  depth: number;
  /** Age of the oldest of those, 0 when none waits. */
  oldestWaitingSeconds: number;
  /** Tasks waiting only because their account is at its cap of running tasks. */
  heldByCap: number;
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
 * Reads every kind's signals at scrape time: its BullMQ queue (one script per queue) and the
 * scheduler's lines (one script for all kinds). A kind that cannot be read (Redis down or slow) is
 * left out and logged: a scrape reports what is known and never fails.
 */
export function queueSignalReader(
  redis: RedisClient,
  queues: Readonly<Record<TaskKind, Queue>>,
  scheduler: Pick<TaskScheduler, 'load'>,
  logger: Logger,
): () => Promise<Map<TaskKind, QueueSignal>> {
  return async () => {
    const entries = Object.entries(queues) as [TaskKind, Queue][];
    const [loads, ...results] = await Promise.allSettled([
      scheduler.load(),
      ...entries.map(async ([, queue]) => {
        const [depth, ageMs] = (await redis.eval(READ_SIGNAL, 3, queue.toKey('wait'), queue.toKey('prioritized'), queue.toKey('paused'), queue.toKey(''))) as [
          number,
          number,
        ];
        return { depth, ageMs };
      }),
    ]);
    const signals = new Map<TaskKind, QueueSignal>();
    if (loads.status === 'rejected') logger.warn('scheduler load not read; queue signals left out of this scrape', { error: (loads.reason as Error).message });
    results.forEach((result, i) => {
      const kind = entries[i]![0];
      if (result.status === 'rejected') logger.warn('queue signals not read; left out of this scrape', { kind, error: (result.reason as Error).message });
      if (result.status !== 'fulfilled' || loads.status !== 'fulfilled') return;
      const { depth, ageMs } = result.value as { depth: number; ageMs: number };
      const load: KindLoad | undefined = loads.value.get(kind);
      const waitingMs = load?.oldestWaitingCreatedMs === undefined ? 0 : Math.max(0, load.nowMs - load.oldestWaitingCreatedMs);
      signals.set(kind, {
        depth: depth + (load?.runnable ?? 0),
        oldestWaitingSeconds: Math.max(ageMs, waitingMs) / 1000,
        heldByCap: load?.heldByCap ?? 0,
      });
    });
    return signals;
  };
}
