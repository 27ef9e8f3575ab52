import './tracing';
import http from 'node:http';
import { setTimeout as delay } from 'node:timers/promises';
import { runService } from '@taskapi/service';
import { withServerSpans } from '@taskapi/telemetry';
import { createApp } from './app';
import { createApiDeps } from './deps';
import { pathOf } from './http/observe';
import { startHousekeeping } from './domain/housekeeping';

/** Requests still running this long after the listener closed are cut off. */
const IN_FLIGHT_GRACE_MS = 10_000;

runService({ name: 'api', stopTimeoutMs: (config) => config.shutdownDrainMs + IN_FLIGHT_GRACE_MS + 5_000 }, async (config, logger) => {
  const deps = await createApiDeps(config, logger, { defaultMetrics: true });
  const server = http.createServer(withServerSpans(createApp(deps), { path: pathOf }));
  server.keepAliveTimeout = config.keepAliveTimeoutMs;
  server.headersTimeout = config.keepAliveTimeoutMs + 1_000;
  server.requestTimeout = 120_000;
  await new Promise<void>((resolve) => server.listen(config.port, config.host, resolve));
  const stopHousekeeping = startHousekeeping(deps.repos.idempotency, logger);
  const address = server.address();
  logger.info('api listening', { port: typeof address === 'object' && address ? address.port : config.port, host: config.host });

  return async () => {
    // 1. Fail /readyz but keep serving, so load balancers stop sending before we stop listening.
    deps.lifecycle.draining = true;
    // Held `Prefer: wait` requests answer now with their task's current state (a wait is only a preference).
    deps.taskWaiters.close();
    if (config.shutdownDrainMs > 0) {
      logger.info('draining: /readyz answers 503 while requests are still served', { drain_ms: config.shutdownDrainMs });
      await delay(config.shutdownDrainMs);
    }
    // 2. Stop accepting connections and let in-flight requests finish (bounded), then close pools.
    stopHousekeeping();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    // Node keeps a keep-alive connection open after its last response even once the server is
    // closing, so connections are closed as they fall idle, and all of them at the deadline.
    const closeIdle = setInterval(() => server.closeIdleConnections(), 100);
    const cutOff = setTimeout(() => server.closeAllConnections(), IN_FLIGHT_GRACE_MS);
    await closed;
    clearInterval(closeIdle);
    clearTimeout(cutOff);
    await deps.close();
  };
});
