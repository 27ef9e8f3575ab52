import { setMaxListeners } from 'node:events';
import type { ConnectionOptions as TlsOptions } from 'node:tls';
import { Worker } from 'bullmq';
import type { Config } from '@taskapi/config';
import type { Database } from '@taskapi/db';
import { createEgressClient } from '@taskapi/egress';
import type { Logger } from '@taskapi/logger';
import { createWebhookQueue, WEBHOOK_QUEUE, type WebhookJob } from '@taskapi/queue';
import { runPeriodically, startConfiguredOpsServer, type RedisClient } from '@taskapi/service';
import { sweepDeliveries } from './domain/sweep-deliveries';
import { createDispatcherMetrics } from './infra/metrics';
import { deliverWebhookProcessor, type DeliveryOutcome } from './processors/deliver-webhook';

export interface DispatcherService {
  /** Port of /healthz, /readyz and /metrics, when OPS_PORT is set. */
  opsPort: number | undefined;
  /**
   * Stops taking jobs and waits for attempts in flight (each bounded by WEBHOOK_TIMEOUT_MS); one
   * whose result cannot be recorded because PostgreSQL is unreachable leaves it in its job.
   */
  stop(): Promise<void>;
}

export async function startDispatcherService(
  config: Config,
  logger: Logger,
  backends: { db: Database; redis: RedisClient },
  opts: { egressTls?: Pick<TlsOptions, 'ca'>; defaultMetrics?: boolean } = {},
): Promise<DispatcherService> {
  const { db, redis } = backends;
  const webhooks = createWebhookQueue(redis);
  const metrics = createDispatcherMetrics({ defaultMetrics: opts.defaultMetrics });
  const egress = createEgressClient({ allowPrivateNetworks: config.webhookAllowPrivateNetworks, tls: opts.egressTls });
  const stopping = new AbortController();
  // Every attempt waiting out a PostgreSQL outage listens on it (and stops listening when it ends):
  // up to the concurrency at once, which is no leak (Node warns past 10).
  setMaxListeners(config.dispatcherConcurrency + 10, stopping.signal);
  const worker = new Worker<WebhookJob, DeliveryOutcome>(
    WEBHOOK_QUEUE.name,
    deliverWebhookProcessor({
      db: db.pool,
      egress,
      webhooks,
      logger,
      secretsKey: config.secretsKey,
      timeoutMs: config.webhookTimeoutMs,
      retryDelaysMs: config.webhookRetryDelaysMs,
      metrics,
      stopping: stopping.signal,
    }),
    {
      connection: redis,
      concurrency: config.dispatcherConcurrency,
      // An attempt lasts at most the webhook timeout; the lock must outlive it.
      lockDuration: Math.max(30_000, config.webhookTimeoutMs * 2),
    },
  );
  worker.on('error', (err) => logger.warn('dispatcher worker error', { error: err.message }));
  const sweeper = runPeriodically({
    name: 'delivery sweeper',
    intervalMs: config.sweeperIntervalMs,
    logger,
    redis,
    lockKey: 'taskapi:sweeper:deliveries',
    task: async () => {
      const requeued = await sweepDeliveries(db.pool, webhooks, config.sweeperIntervalMs);
      if (requeued) logger.info('delivery sweeper re-enqueued deliveries', { requeued });
    },
  });
  const ops = await startConfiguredOpsServer('webhook-dispatcher', config, metrics.registry, backends);
  logger.info('webhook dispatcher started', { concurrency: config.dispatcherConcurrency });
  return {
    opsPort: ops?.port,
    async stop() {
      // Attempts waiting for PostgreSQL to record their result stop waiting: the result is kept in
      // their job, which runs again after the restart.
      stopping.abort();
      await ops?.close();
      await sweeper.stop();
      await worker.close();
      await webhooks.queue.close();
      await egress.close();
    },
  };
}
