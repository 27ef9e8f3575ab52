import http from 'node:http';
import { runService } from '@taskapi/service';
import { createApp } from './app';
import { createApiDeps } from './deps';
import { startHousekeeping } from './domain/housekeeping';

runService({ name: 'api' }, async (config, logger) => {
  const deps = await createApiDeps(config, logger, { defaultMetrics: true });
  const server = http.createServer(createApp(deps));
  // Longer than a typical load balancer's idle timeout, so it closes idle connections first.
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = 66_000;
  server.requestTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve));
  const stopHousekeeping = startHousekeeping(deps.db.pool, logger);
  const address = server.address();
  logger.info('api listening', { port: typeof address === 'object' && address ? address.port : config.port, host: config.host });

  return async () => {
    // Stop accepting connections, let in-flight requests finish, then close pools.
    stopHousekeeping();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    await closed;
    await deps.close();
  };
});
