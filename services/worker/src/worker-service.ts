import { setTimeout as delay } from 'node:timers/promises';
import type { ConnectionOptions as TlsOptions } from 'node:tls';
import { Worker } from 'bullmq';
import type { Config } from '@taskapi/config';
import type { Database } from '@taskapi/db';
import { PREDICTION_UPDATED_CHANNEL, readPrediction, returnOrphanedPredictions, takeOrphanedPredictions, terminalStatusName, e2eSeconds } from '@taskapi/domain';
import { WorkerShutdown } from '@taskapi/engines';
import { createEgressClient } from '@taskapi/egress';
import type { Logger } from '@taskapi/logger';
import { closeQueues, createTaskQueues, createWebhookQueue, TASK_QUEUES, type TaskJob } from '@taskapi/queue';
import { createRedisClient, PubSubFanout, runPeriodically, startConfiguredOpsServer, type RedisClient } from '@taskapi/service';
import type { TaskKind } from '@taskapi/task-kinds';
import { createTaskLifecycle, WorkerSlots } from '@taskapi/task-lifecycle';
import { accountCaps } from './repositories/accounts';
import { createEngines } from './engines';
import { createFileStore, storeReadiness, type FileStore } from '@taskapi/file-store';
import { taskOutputs } from './infra/file-store';
import { createWorkerMetrics } from './infra/metrics';
import { RunningTasks } from './infra/running-tasks';
import { startRetentionJob } from './infra/retention-job';
import { runTaskProcessor, type RunTaskOutcome } from './processors/run-task';

/** How often the scheduler's upkeep runs (caps, due retries): an operator's cap change applies within about this. */
const SCHEDULER_UPKEEP_MS = 1_000;
/** How often each worker reports its idle slots (well within the scheduler's 10 s before it takes a worker for gone). */
const HEARTBEAT_MS = 2_000;
/** How often a worker with model servers looks for predictions of tasks cancelled while queued. */
const ORPHAN_SWEEP_MS = 2_000;

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
  const store = opts.store ?? createFileStore(config);
  const files = taskOutputs(store);
  // The bucket (or directory) is the operator's: say clearly at start when it is not usable. The
  // worker still starts (readiness fails); attempts meanwhile fail with a retryable error.
  const storage = storeReadiness(store, logger);
  await storage.first;
  const egress = createEgressClient({ allowPrivateNetworks: config.webhookAllowPrivateNetworks, tls: opts.egressTls });
  // This process's pub/sub connection: task cancels (every worker) and model-server updates (Cog kinds).
  const subscriber = createRedisClient(config, { connectionName: 'taskapi-worker-sub', maxRetriesPerRequest: null, enableOfflineQueue: true });
  subscriber.on('error', (err: Error) => logger.warn('redis subscriber error', { error: err.message }));
  const cancels = RunningTasks.fanout(subscriber, logger);
  await cancels.start();
  let predictionUpdates: PubSubFanout | undefined;
  const bullWorkers = new Map<TaskKind, Worker<TaskJob, RunTaskOutcome>>();
  const { engines, cogServers, description, abandon } = await createEngines(config, config.workerKinds, {
    redis,
    store,
    egress,
    logger,
    updates: async () => {
      if (!predictionUpdates) {
        predictionUpdates = new PubSubFanout(subscriber, [PREDICTION_UPDATED_CHANNEL], (_channel, message) => message.split(' ')[0] ?? null, logger);
        await predictionUpdates.start();
      }
      return predictionUpdates;
    },
    // A model server that runs fewer predictions at once than WORKER_CONCURRENCY: this worker takes
    // no more of that kind's jobs than it can run (BullMQ's concurrency, and the idle slots it reports).
    onCapacity: (kind, capacity) => {
      const worker = bullWorkers.get(kind);
      const concurrency = Math.min(config.workerConcurrency, capacity);
      if (worker && worker.concurrency !== concurrency) {
        worker.concurrency = concurrency;
        logger.info('model server capacity learned; concurrency adjusted', { kind, concurrency });
      }
    },
  });
  const shutdown = new AbortController();
  const engineRuns = new Set<Promise<unknown>>();
  const metrics = createWorkerMetrics({ defaultMetrics: opts.defaultMetrics, kinds: config.workerKinds });
  // The task's lifecycle on this worker's connections: every transition its runs, its given-up jobs
  // and its sweeper make. A prediction left by a task that ended without its run is cancelled on
  // its model server (this worker's, for its kinds).
  const lifecycle = createTaskLifecycle({
    config,
    db: db.pool,
    redis,
    taskQueues,
    webhooks,
    predictions: { abandon },
    logger,
    onFinished: (task, errorCode) => metrics.observeE2e(task.kind, terminalStatusName(task.status), e2eSeconds(task.created_at, task.finished_at), errorCode),
  });
  const running = new RunningTasks(cancels, (publicId) => lifecycle.taskStatus(publicId), logger);
  // A start that found no call to ride along with goes alone (see WorkerSlots).
  const reportStarts = () =>
    void runs.heartbeat().catch((err: unknown) => logger.warn('could not report started tasks to the scheduler; the next report carries them', { error: (err as Error).message }));
  const slots = new WorkerSlots(config.workerKinds, config.workerConcurrency, reportStarts, (kind) => cogServers[kind]?.capacity ?? config.workerConcurrency);
  const runs = lifecycle.runs({ slots, shutdown: shutdown.signal });

  const workers = config.workerKinds.map((kind) => {
    const engine = engines[kind];
    if (!engine) throw new Error(`no engine for ${kind}`);
    const processor = runTaskProcessor(
      {
        runs,
        slots,
        engine,
        store,
        files,
        egress,
        metrics,
        logger,
        timeoutMs: config.taskTimeoutsMs[kind],
        shutdown: shutdown.signal,
        engineRuns,
        retryBackoffMs: config.taskRetryBackoffMs,
        modelBusyTimeoutMs: config.modelBusyTimeoutMs,
        running,
      },
      kind,
    );
    const worker = new Worker<TaskJob, RunTaskOutcome>(TASK_QUEUES[kind].name, processor, {
      connection: redis,
      concurrency: Math.min(config.workerConcurrency, cogServers[kind]?.capacity ?? config.workerConcurrency),
      lockDuration: config.workerLockDurationMs,
      stalledInterval: config.workerLockDurationMs,
      maxStalledCount: 1,
    });
    bullWorkers.set(kind, worker);
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
        const finished = await lifecycle.repair.giveUp(kind, job.data.public_id);
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
        const result = await lifecycle.repair.sweep(kind, config.sweeperIntervalMs);
        if (result.requeued || result.failed || result.released) logger.info('task sweeper recovered work', { kind, ...result });
      },
    }),
  );

  // Predictions of tasks cancelled while no run followed them (noted by the API's cancel): cancelled
  // on their kind's model server by a worker that has it, within ORPHAN_SWEEP_MS.
  const orphans =
    Object.keys(cogServers).length === 0
      ? undefined
      : runPeriodically({
          name: 'orphaned predictions',
          intervalMs: ORPHAN_SWEEP_MS,
          logger,
          task: async () => {
            const notServed: string[] = [];
            for (const publicId of await takeOrphanedPredictions(redis, 100)) {
              const { current, kind } = await readPrediction(redis, publicId);
              if (current === null || running.has(publicId)) continue;
              if (kind !== null && kind in cogServers) await abandon(kind as TaskKind, publicId);
              else notServed.push(publicId);
            }
            await returnOrphanedPredictions(redis, notServed);
          },
        });

  // This process's idle slots, so the scheduler releases tasks for them: now, and every few seconds
  // (a worker not heard from for 10 s is taken for gone, its slots with it).
  const heartbeat = () => runs.heartbeat();
  await heartbeat().catch((err: unknown) => logger.warn('could not report idle slots to the scheduler; retrying', { error: (err as Error).message }));
  const beats = runPeriodically({ name: 'scheduler heartbeat', intervalMs: HEARTBEAT_MS, logger, task: heartbeat });

  // The scheduler's upkeep, on one replica per interval: every account's own cap from the database
  // (so an operator's change applies within about a second, without a restart), retries whose
  // wait is over, and anything that waits for a free slot.
  const upkeep = runPeriodically({
    name: 'scheduler upkeep',
    intervalMs: SCHEDULER_UPKEEP_MS,
    logger,
    redis,
    lockKey: 'taskapi:scheduler:upkeep',
    task: async () => {
      const changed = await lifecycle.capacity.setCaps(await accountCaps(db.pool));
      if (changed > 0) logger.info('account caps changed', { accounts: changed });
    },
  });

  // Tasks past their ttl_seconds expire on every replica (no lock: PostgreSQL decides).
  const expiry = lifecycle.expiry.sweepPeriodically(logger);

  // Every replica tries; the sweeper lock lets one of them run it per interval.
  const retention = startRetentionJob({ db, redis, store, logger, metrics }, config.retentionDays, opts.retentionIntervalMs);

  // Ready only while every model server this worker uses takes predictions (READY or BUSY).
  const modelChecks = Object.fromEntries(Object.entries(cogServers).map(([kind, server]) => [`model_${kind}`, () => server.checkServing()]));
  const ops = await startConfiguredOpsServer('worker', config, metrics.registry, backends, { storage: storage.check, ...modelChecks });
  logger.info('worker started', { kinds: config.workerKinds, concurrency: config.workerConcurrency, engines: description });
  return {
    opsPort: ops?.port,
    async stop() {
      // Stop fetching first (close() marks the workers closing at once) and take no more work from
      // the scheduler, then abort running engines: their tasks go back with their places kept, and
      // close() resolves when they have.
      slots.close();
      const closing = Promise.all(workers.map((w) => w.close()));
      shutdown.abort(new WorkerShutdown());
      await Promise.all([closing, beats.stop(), orphans?.stop(), ...sweepers.map((s) => s.stop()), upkeep.stop(), expiry.stop(), retention.stop(), ops?.close()]);
      await runs.leave().catch((err: unknown) => logger.warn('could not tell the scheduler this worker stopped', { error: (err as Error).message }));
      // Aborted engines were not waited for; give them a moment to remove their temporary files.
      await Promise.race([Promise.allSettled([...engineRuns]), delay(1_000)]);
      await closeQueues([webhooks.queue, ...Object.values(taskQueues.queues)]);
      await Promise.allSettled([egress.close(), subscriber.quit(), ...Object.values(cogServers).map((server) => server.close())]);
    },
  };
}
