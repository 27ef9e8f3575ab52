// The webhook dispatcher process: sends signed deliveries, schedules retries as delayed jobs,
// records every attempt, and sweeps pending deliveries Redis lost.
import './tracing';
import { connectBackends, runService } from '@taskapi/service';
import { startDispatcherService } from './dispatcher-service';

// In-flight attempts are finished, each bounded by WEBHOOK_TIMEOUT_MS.
runService({ name: 'webhook-dispatcher', stopTimeoutMs: (config) => config.webhookTimeoutMs + 5_000 }, async (config, logger) => {
  const backends = await connectBackends(config, logger, 'taskapi-webhook-dispatcher', Math.min(config.dispatcherConcurrency, 20) + 2);
  const service = await startDispatcherService(config, logger, backends, { defaultMetrics: true });
  return async () => {
    await service.stop();
    await backends.close();
  };
});
