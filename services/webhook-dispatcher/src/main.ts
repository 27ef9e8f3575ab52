// The webhook dispatcher process. Signing, delivery and retries are the next milestone (issue #3);
// until then this process validates its configuration, checks that PostgreSQL and Redis are
// reachable and idles until stopped, so `npm start` and docker-compose already run the final topology.
import { connectBackends, runService } from '@taskapi/service';

runService({ name: 'webhook-dispatcher' }, async (config, logger) => {
  const backends = await connectBackends(config, logger, 'taskapi-dispatcher', 2);
  logger.warn('webhook delivery is not implemented yet; outbox rows stay pending', {
    timeout_ms: config.webhookTimeoutMs,
    retry_delays_ms: config.webhookRetryDelaysMs,
  });
  return backends.close;
});
