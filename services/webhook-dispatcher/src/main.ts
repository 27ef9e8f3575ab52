// The webhook dispatcher process. Signing, delivery and retries are the
// next milestone (issue #3); until then this process validates its configuration, checks that
// PostgreSQL and Redis are reachable and idles until stopped,
// so `npm start` and docker-compose already run the final topology.
import { loadConfig } from '@taskapi/config';
import { createDatabase } from '@taskapi/db';
import { createLogger } from '@taskapi/logger';
import { Redis } from 'ioredis';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ service: 'webhook-dispatcher', level: config.logLevel });
  for (const warning of config.warnings) logger.warn(warning);
  const db = createDatabase({ url: config.databaseUrl, poolSize: 1, applicationName: 'taskapi-dispatcher' });
  const redis = new Redis(config.redisUrl, { connectionName: 'taskapi-dispatcher', maxRetriesPerRequest: null });
  redis.on('error', (err: Error) => logger.warn('redis connection error', { error: err.message }));
  await db.pool.query('SELECT 1');
  await redis.ping();
  logger.warn('webhook delivery is not implemented yet; outbox rows stay pending', {
    timeout_ms: config.webhookTimeoutMs,
    retry_delays_ms: config.webhookRetryDelaysMs,
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
  process.stderr.write(`webhook-dispatcher failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
