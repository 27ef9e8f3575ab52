import http from 'node:http';
import { loadConfig } from '@taskapi/config';
import { createLogger } from '@taskapi/logger';
import { createApp } from './app';
import { createApiDeps } from './deps';
import { startHousekeeping } from './domain/housekeeping';

async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger({ service: 'api', level: config.logLevel });
  for (const warning of config.warnings) logger.warn(warning);

  const deps = await createApiDeps(config, logger, { defaultMetrics: true });
  const server = http.createServer(createApp(deps));
  // Longer than a typical load balancer's idle timeout, so it closes idle connections first.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve));
  const address = server.address();
  const stopHousekeeping = startHousekeeping(deps.db.pool, logger);
  logger.info('api listening', { port: typeof address === 'object' && address ? address.port : config.port, host: config.host });

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    const force = setTimeout(() => {
      logger.error('shutdown timed out; exiting');
      process.exit(1);
    }, 20_000).unref();
    // Stop accepting connections, let in-flight requests finish, then close pools.
    stopHousekeeping();
    server.close();
    server.closeIdleConnections();
    await new Promise<void>((resolve) => server.once('close', resolve));
    await deps.close();
    clearTimeout(force);
    logger.info('stopped');
    process.exit(0);
  };
  process.on('SIGTERM', () => void shutdown('SIGTERM'));
  process.on('SIGINT', () => void shutdown('SIGINT'));
}

main().catch((err: unknown) => {
  // The logger may not exist yet (bad configuration): plain stderr, message only.
  process.stderr.write(`api failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
