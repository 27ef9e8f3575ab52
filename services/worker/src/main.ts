// The worker process. Task execution (engines, terminal transitions, refunds on failure) is the
// next milestone (issue #3); until then this process validates its configuration, checks that
// PostgreSQL and Redis are reachable, reports which kinds it would serve, and idles until stopped,
// so `npm start` and docker-compose already run the final topology.
import { connectBackends, runService } from '@taskapi/service';

runService({ name: 'worker' }, async (config, logger) => {
  const backends = await connectBackends(config, logger, 'taskapi-worker', config.workerConcurrency + 1);
  logger.warn('task processing is not implemented yet; tasks stay queued (status 0)', {
    kinds: config.workerKinds,
    concurrency: config.workerConcurrency,
  });
  return backends.close;
});
