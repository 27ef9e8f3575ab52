import { setTimeout as delay } from 'node:timers/promises';
import type { ConnectionOptions as TlsOptions } from 'node:tls';
import { Worker } from 'bullmq';
import type { Config } from '@taskapi/config';
import type { Database } from '@taskapi/db';
import { TaskStatus } from '@taskapi/domain';
import { createEgressClient } from '@taskapi/egress';
import type { Logger } from '@taskapi/logger';
import { closeQueues, createTaskQueues, createWebhookQueue, TASK_QUEUES, type TaskJob } from '@taskapi/queue';
import { runPeriodically, startConfiguredOpsServer, type RedisClient } from '@taskapi/service';
import { finishAndAnnounce } from './domain/finish-and-announce';
import { INTERNAL_ERROR_MESSAGE } from './domain/failure-message';
import { sweepTasks } from './domain/sweep-tasks';
import { createEngines } from './engines';
import { createFileStore, storeReadiness, type FileStore } from '@taskapi/file-store';
import { taskOutputs } from './infra/file-store';
import { createWorkerMetrics } from './infra/metrics';
import { startRetentionJob } from './infra/retention-job';
import { runTaskProcessor, type RunTaskOutcome } from './processors/run-task';

export interface WorkerService {
  /** Port of /healthz, /readyz and /metrics, when OPS_PORT is set. */
  opsPort: number | undefined;
  /** Stops taking jobs, hands running ones back to the queue, stops the sweeper. */
  stop(): Promise<void>;
}

/**
 * One BullMQ worker per configured kind (`WORKER_KINDS`), each running up to `WORKER_CONCURRENCY`
 * tasks, plus the sweeper for those kinds.
 */
export async function startWorkerService(
  config: Config,
  logger: Logger,
  backends: { db: Database; redis: RedisClient },
  opts: { egressTls?: Pick<TlsOptions, 'ca'>; defaultMetrics?: boolean; store?: FileStore; retentionIntervalMs?: number } = {},
): Promise<WorkerService> {
  const { db, redis } = backends;
  const webhooks = createWebhookQueue(redis);
  const taskQueues = createTaskQueues(redis);
  const { engines, description } = createEngines(config, config.workerKinds);
  const store = opts.store ?? createFileStore(config);
  const files = taskOutputs(store);
  // The bucket (or directory) is the operator's: say clearly at start when it is not usable. The
  // worker still starts (readiness fails); attempts meanwhile fail with a retryable error.
  const storage = storeReadiness(store, logger);
  await storage.first;
  const egress = createEgressClient({ allowPrivateNetworks: config.webhookAllowPrivateNetworks, tls: opts.egressTls });
  const shutdown = new AbortController();
  const engineRuns = new Set<Promise<unknown>>();
  const metrics = createWorkerMetrics({ defaultMetrics: opts.defaultMetrics });
  const announce = { db: db.pool, redis, webhooks, logger, metrics };

  const workers = config.workerKinds.map((kind) => {
    const engine = engines[kind];
    if (!engine) throw new Error(`no engine for ${kind}`);
    const processor = runTaskProcessor(
      { ...announce, engine, store, files, egress, metrics, timeoutMs: config.taskTimeoutsMs[kind], shutdown: shutdown.signal, engineRuns },
      kind,
    );
    const worker = new Worker<TaskJob, RunTaskOutcome>(TASK_QUEUES[kind].name, processor, {
      connection: redis,
      concurrency: config.workerConcurrency,
      lockDuration: config.workerLockDurationMs,
      stalledInterval: config.workerLockDurationMs,
      maxStalledCount: 1,
    });
    worker.on('error', (err) => logger.warn('worker error', { kind, error: err.message }));
    // The recovery path of a worker that died mid-task: its lock expired and BullMQ put the job
    // back (or failed it, past maxStalledCount; the `failed` handler below ends that task).
    worker.on('stalled', (jobId, prev) =>
      logger.warn('stalled job recovered (its worker stopped renewing the lock); it runs again', { kind, job_id: jobId, public_id: jobId, was: prev }),
    );
    // A job that ends failed without the processor failing the task (a worker crashed mid-task
    // more often than maxStalledCount allows, or the last attempt broke before its transition):
    // the task must still end, with a refund.
    worker.on('failed', (job, err) => {
      if (!job) return;
      void (async () => {
        // Failed for good (not retried): a sorted-set lookup, not getState's scan of the waiting list.
        if (!(await job.isFailed())) return;
        const finished = await finishAndAnnounce(announce, job.data.public_id, { status: TaskStatus.failed, errorCode: 'internal_error', errorMessage: INTERNAL_ERROR_MESSAGE });
        if (!finished) return;
        metrics.observeRun(kind, 'failed', 0);
        logger.warn('task failed after its job gave up', { public_id: job.data.public_id, job_id: job.id, reason: err.message });
      })().catch((e: unknown) =>
        logger.error('could not fail task after its job gave up; the sweeper will', { public_id: job.data.public_id, error: (e as Error).message }),
      );
    });
    return worker;
  });

  const sweepers = config.workerKinds.map((kind) =>
    runPeriodically({
      name: `task sweeper (${kind})`,
      intervalMs: config.sweeperIntervalMs,
      logger,
      redis,
      lockKey: `taskapi:sweeper:tasks:${kind}`,
      task: async () => {
        const result = await sweepTasks({ ...announce, taskQueues }, [kind], config.sweeperIntervalMs);
        if (result.requeued || result.failed) logger.info('task sweeper recovered work', { kind, ...result });
      },
    }),
  );

  // Every replica tries; the sweeper lock lets one of them run it per interval.
  const retention = startRetentionJob({ db, redis, store, logger, metrics }, config.retentionDays, opts.retentionIntervalMs);

  const ops = await startConfiguredOpsServer(config, metrics.registry, backends, { storage: storage.check });
  logger.info('worker started', { kinds: config.workerKinds, concurrency: config.workerConcurrency, engines: description });
  return {
    opsPort: ops?.port,
    async stop() {
      // Stop fetching first (close() marks the workers closing at once), then abort running engines:
      // their jobs go back to the queue, and close() resolves when they have.
      const closing = Promise.all(workers.map((w) => w.close()));
      shutdown.abort(new Error('worker shutting down'));
      await Promise.all([closing, ...sweepers.map((s) => s.stop()), retention.stop(), ops?.close()]);
      // Aborted engines were not waited for; give them a moment to remove their temporary files.
      await Promise.race([Promise.allSettled([...engineRuns]), delay(1_000)]);
      await closeQueues([webhooks.queue, ...Object.values(taskQueues.queues)]);
      await egress.close();
    },
  };
}
