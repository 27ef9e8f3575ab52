import type { RedisOptions } from 'ioredis';
import { createRedisClient, type RedisClient, type RedisTarget } from '@taskapi/service';

/**
 * A Redis client that fails fast while disconnected (no offline queue), so request paths turn an
 * outage into a 503 at once instead of hanging.
 */
export function createRedis(target: RedisTarget, name: string, extra: RedisOptions = {}): RedisClient {
  return createRedisClient(target, {
    connectionName: name,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    commandTimeout: 2_000,
    retryStrategy: (times) => Math.min(times * 100, 2_000),
    ...extra,
  });
}

/** Resolves when the client is ready, or rejects after `timeoutMs`. */
export function waitForRedis(redis: RedisClient, timeoutMs = 30_000): Promise<void> {
  if (redis.status === 'ready') return Promise.resolve();
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`Redis did not become ready within ${timeoutMs} ms`));
    }, timeoutMs);
    const onReady = () => {
      cleanup();
      resolve();
    };
    const cleanup = () => {
      clearTimeout(timer);
      redis.off('ready', onReady);
    };
    redis.on('ready', onReady);
  });
}
