// The worker process: runs the task kinds in WORKER_KINDS (one BullMQ queue each) with their
// engines, and the sweeper that re-enqueues tasks Redis lost.
import './tracing';
import { connectBackends, runService } from '@taskapi/service';
import { startWorkerService } from './worker-service';

// Running jobs are handed back at once on SIGTERM, so a stop takes well under the 10 s promised.
runService({ name: 'worker', stopTimeoutMs: 9_000 }, async (config, logger) => {
  const backends = await connectBackends(config, logger, 'taskapi-worker', config.workerConcurrency * config.workerKinds.length + 2);
  const service = await startWorkerService(config, logger, backends, { defaultMetrics: true });
  return async () => {
    await service.stop();
    await backends.close();
  };
});
