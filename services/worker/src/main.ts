// The worker process. Task execution (engines, terminal transitions, refunds on failure) is the
// next milestone (issue #3); until then this process validates its configuration, checks that
// PostgreSQL and Redis are reachable, reports which kinds it would serve, and idles until stopped,
// so `npm start` and docker-compose already run the final topology.
import { loadConfig } from '@taskapi/config';
import { createDatabase } from '@taskapi/db';
import { createLogger } from '@taskapi/logger';
import { Redis } from 'ioredis';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ service: 'worker', level: config.logLevel });
  for (const warning of config.warnings) logger.warn(warning);
  const db = createDatabase({ url: config.databaseUrl, poolSize: 1, applicationName: 'taskapi-worker' });
  const redis = new Redis(config.redisUrl, { connectionName: 'taskapi-worker', maxRetriesPerRequest: null });
  redis.on('error', (err: Error) => logger.warn('redis connection error', { error: err.message }));
  await db.pool.query('SELECT 1');
  await redis.ping();
  logger.warn('task processing is not implemented yet; tasks stay queued (status 0)', {
    kinds: config.workerKinds,
    concurrency: config.workerConcurrency,
  });

  const shutdown = async (signal: string) => {
    logger.info('shutting down', { signal });
    await redis.quit().catch(() => undefined);
    await db.close();
    process.exit(0);
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  process.stderr.write(`worker failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
