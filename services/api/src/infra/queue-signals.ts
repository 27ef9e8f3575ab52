import type { Queue } from 'bullmq';
import type { RedisClient } from '@taskapi/service';
import type { TaskKind } from '@taskapi/task-kinds';
import type { Logger } from '@taskapi/logger';
import type { KindLoad } from '@taskapi/scheduler';
import { apiScripts } from './api-scripts';

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

// One round trip per queue (src/commands/queue-signal-3.lua), atomic, by Redis's clock.
const queueSignalScript = apiScripts.define({
  command: 'queue-signal',
  keys: (queue: Queue) => [queue.toKey('wait'), queue.toKey('prioritized'), queue.toKey('paused')],
  args: (queue) => [queue.toKey('')],
  reply: (raw) => {
    const [depth = 0, ageMs = 0] = raw as number[];
    return { depth, ageMs };
  },
});

/**
 * Reads every kind's signals at scrape time: its BullMQ queue (one script per queue) and the
 * scheduler's lines (one script for all kinds). A kind that cannot be read (Redis down or slow) is
 * left out and logged: a scrape reports what is known and never fails.
 */
export function queueSignalReader(
  redis: RedisClient,
  queues: Readonly<Record<TaskKind, Queue>>,
  schedulerLoad: () => Promise<Map<TaskKind, KindLoad>>,
  logger: Logger,
): () => Promise<Map<TaskKind, QueueSignal>> {
  return async () => {
    const entries = Object.entries(queues) as [TaskKind, Queue][];
    const [loads, ...results] = await Promise.allSettled([
      schedulerLoad(),
      ...entries.map(([, queue]) => queueSignalScript(redis, queue)),
    ]);
    const signals = new Map<TaskKind, QueueSignal>();
    if (loads.status === 'rejected') logger.warn('scheduler load not read; queue signals left out of this scrape', { error: (loads.reason as Error).message });
    results.forEach((result, i) => {
      const kind = entries[i]![0];
      if (result.status === 'rejected') logger.warn('queue signals not read; left out of this scrape', { kind, error: (result.reason as Error).message });
      if (result.status !== 'fulfilled' || loads.status !== 'fulfilled') return;
      const { depth, ageMs } = result.value;
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
