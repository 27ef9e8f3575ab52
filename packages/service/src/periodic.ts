import type { Logger } from '@taskapi/logger';
import type { RedisClient } from './redis-client';

export interface Periodic {
  stop(): Promise<void>;
}

/**
 * Runs `task` soon after start and then every `intervalMs` (±10 % jitter). With `lockKey`, a Redis
 * lock lets one replica run it per interval; the others skip. A failing run is logged and retried
 * at the next tick. `stop` waits for a run in progress.
 */
export function runPeriodically(opts: {
  name: string;
  intervalMs: number;
  logger: Logger;
  redis?: RedisClient;
  lockKey?: string;
  task: () => Promise<void>;
}): Periodic {
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  const tick = async () => {
    try {
      if (opts.redis && opts.lockKey) {
        const got = await opts.redis.set(opts.lockKey, '1', 'PX', Math.max(1, Math.floor(opts.intervalMs * 0.8)), 'NX');
        if (got !== 'OK') return;
      }
      await opts.task();
    } catch (err) {
      opts.logger.warn(`${opts.name} failed; retrying next interval`, { error: (err as Error).message });
    }
  };
  const schedule = (delay: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = tick().finally(() => {
        running = undefined;
        schedule(opts.intervalMs * (0.9 + Math.random() * 0.2));
      });
    }, delay);
  };
  schedule(Math.min(1_000, opts.intervalMs) * Math.random());

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
