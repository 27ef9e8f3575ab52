import type { Config } from '@taskapi/config';
import { createDatabase, type Database } from '@taskapi/db';
import type { Logger } from '@taskapi/logger';
import { createRedisClient, type RedisClient, type RedisTarget } from './redis-client';
import { reportWhileWaitingForRedis } from './redis-readiness';

export interface Backends {
  db: Database;
  redis: RedisClient;
  close(): Promise<void>;
}

/**
 * Opens and checks the PostgreSQL pool and a Redis connection suited to BullMQ workers
 * (`maxRetriesPerRequest: null`: blocking commands wait out a Redis restart instead of failing).
 */
export async function connectBackends(config: Config, logger: Logger, name: string, poolSize: number): Promise<Backends> {
  const db = createDatabase({ url: config.databaseUrl, poolSize, applicationName: name });
  const redis = createRedisClient(config, { connectionName: name, maxRetriesPerRequest: null });
  redis.on('error', (err: Error) => logger.warn('redis connection error', { error: err.message }));
  await db.pool.query('SELECT 1');
  await untilRedisAnswers(redis, config, logger);
  return {
    db,
    redis,
    async close() {
      await redis.quit().catch(() => undefined);
      await db.close();
    },
  };
}

/** Waits for the first PING (the client retries on its own), saying every few seconds why it waits. */
async function untilRedisAnswers(redis: RedisClient, target: RedisTarget, logger: Logger): Promise<void> {
  const stopReporting = reportWhileWaitingForRedis(target, logger);
  try {
    await redis.ping();
  } finally {
    stopReporting();
  }
}
