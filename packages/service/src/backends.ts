import type { Config } from '@taskapi/config';
import { createDatabase, type Database } from '@taskapi/db';
import type { Logger } from '@taskapi/logger';
import { createRedisClient, type RedisClient } from './redis-client';

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
  await redis.ping();
  return {
    db,
    redis,
    async close() {
      await redis.quit().catch(() => undefined);
      await db.close();
    },
  };
}
