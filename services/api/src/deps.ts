import type { Config } from '@taskapi/config';
import { ModelWebhookTokens, ReadTokens } from '@taskapi/crypto';
import { createDatabase, type Database } from '@taskapi/db';
import { createFileStore, storeReadiness, type FileStore } from '@taskapi/file-store';
import type { Logger } from '@taskapi/logger';
import { Batcher, describeRedisProblem, redisReadinessCheck, reportWhileWaitingForRedis, type Periodic, type RedisClient } from '@taskapi/service';
import type { TlsOptions } from 'node:tls';
import { createEgressClient, type EgressClient } from '@taskapi/egress';
import { closeQueues, createTaskQueues, createWebhookQueue, type TaskQueues, type WebhookQueue } from '@taskapi/queue';
import type { NewTask, TaskPosition } from '@taskapi/scheduler';
import { noteCancelledPrediction, e2eSeconds } from '@taskapi/domain';
import { createTaskLifecycle, type TaskLifecycle } from '@taskapi/task-lifecycle';
import type { TaskKind } from '@taskapi/task-kinds';
import { TaskCreator } from './domain/create-task';
import { FileLinks } from './domain/file-links';
import { KeyCache } from './domain/key-cache';
import { RateLimiter } from './domain/rate-limit';
import { SessionService } from './domain/sessions';
import { TaskReader } from './domain/read-task';
import { DEFAULT_TASK_EVENT_TIMINGS, type TaskEventTimings } from './domain/task-events';
import { TaskReadCache } from './domain/task-read-cache';
import { MAX_WAITERS, MAX_WAITERS_PER_ACCOUNT, TaskWaiters } from './domain/task-waiters';
import { ApiKeyVerifier } from './domain/verify-api-key';
import { createMetrics, type ApiMetrics } from './infra/metrics';
import { queueSignalReader } from './infra/queue-signals';
import { createRedis, waitForRedis } from './infra/redis';
import { createRepositories, type Repositories } from './repositories';
import { ApiVersions } from './versions/registry';

/** Everything the API's routes need, built once per process (or per test app). */
export interface ApiDeps {
  config: Config;
  logger: Logger;
  /** The database connections; only `repos` (and tests) query through them. */
  db: Database;
  /** Every query of the API, one repository per table family. */
  repos: Repositories;
  /** Task files: outputs (file routes) and uploaded face-detection images (`STORAGE_DRIVER`). */
  store: FileStore;
  /**
   * The checks of `GET /readyz` by name (the store's: a write until one succeeds, see
   * storeReadiness); the readiness gauges of `/metrics` run the same ones.
   */
  readinessChecks: Record<'database' | 'redis' | 'storage', () => Promise<unknown>>;
  /** Signs `files[].url` of the task API (FILE_URL_TTL_SECONDS) and checks signed-route links. */
  fileLinks: FileLinks;
  /** Checks the token in a model server's webhook URL (docs/models.md). */
  modelWebhookTokens: ModelWebhookTokens;
  /** Browser read tokens: sealed by `POST /api/tasks/{id}/read-token`, opened on `/api/public/*`. */
  readTokens: ReadTokens;
  /** Commands: rate limits, revocation markers, sessions, login throttle. Fails fast when down. */
  redis: RedisClient;
  /** Dedicated pub/sub connection for key revocations and terminal task events. */
  subscriber: RedisClient;
  /** BullMQ producer connection. */
  queueRedis: RedisClient;
  taskQueues: TaskQueues;
  /** Webhook attempts (manual resend) and Bull Board. */
  webhooks: WebhookQueue;
  /** Test webhooks go out through the same egress policy as the dispatcher's real ones. */
  egress: EgressClient;
  verifier: ApiKeyVerifier;
  /** `GET /api/tasks/{id}`: cached rows validated by status markers the rate limiter prefetches. */
  taskReader: TaskReader;
  /** `Prefer: wait` requests and task event streams, woken by task events on `subscriber`. */
  taskWaiters: TaskWaiters;
  /** Keep-alive and progress intervals of task event streams (`GET /api/tasks/{publicId}/events`). */
  taskEventTimings: TaskEventTimings;
  taskCreator: TaskCreator;
  /**
   * Expires tasks past their `ttl_seconds` every EXPIRY_SWEEP_MS (one indexed statement on the
   * primary, nothing found in the common case). Stopped by `close`.
   */
  expirySweep: Periodic;
  /**
   * Every transition of a task the API makes (docs/architecture.md, "A task's life"): a created
   * task joining the scheduler, cancels, a reader's marker seed; and the scheduler's figures
   * (metrics, the console's concurrency).
   */
  taskLifecycle: TaskLifecycle;
  /**
   * Gives a committed task to the scheduler, batching concurrent ones per kind into one Redis round
   * trip; answers where it stands in its line (undefined when the scheduler does not say).
   */
  enqueueTask(kind: TaskKind, task: NewTask): Promise<TaskPosition | undefined>;
  rateLimiter: RateLimiter;
  sessions: SessionService;
  metrics: ApiMetrics;
  /** The dated API versions served (docs/api.md, "Versions"): the shipped ones unless a test adds its own. */
  apiVersions: ApiVersions;
  /** Set by the process on SIGTERM: `/readyz` answers 503 and responses close their connection. */
  lifecycle: { draining: boolean };
  close(): Promise<void>;
}

/** What a process (or a test) may choose besides its configuration. */
export interface ApiDepsOptions {
  defaultMetrics?: boolean;
  store?: FileStore;
  egressTls?: Pick<TlsOptions, 'ca'>;
  /** Requests held open on tasks (`Prefer: wait`, event streams): at most this many per process and per account. Defaults: MAX_WAITERS, MAX_WAITERS_PER_ACCOUNT. */
  heldRequests?: { max?: number; perAccount?: number };
  /** Event stream timings; defaults: DEFAULT_TASK_EVENT_TIMINGS (tests shorten them). */
  taskEventTimings?: Partial<TaskEventTimings>;
  /** The versions served; default: the shipped ones (SHIPPED_VERSIONS). Tests add an example change of their own. */
  apiVersions?: ApiVersions;
}

export async function createApiDeps(config: Config, logger: Logger, opts: ApiDepsOptions = {}): Promise<ApiDeps> {
  const store = opts.store ?? createFileStore(config);
  // The bucket (or directory) is the operator's: say clearly at start when it is not usable. The API
  // still starts (readiness fails, file routes and uploads answer 503) so the rest keeps serving.
  const storage = storeReadiness(store, logger);
  const readinessChecks = { database: () => repos.ping(), redis: () => redisCheck(), storage: storage.check };
  const db = createDatabase({
    url: config.databaseUrl,
    poolSize: config.databasePoolSize,
    applicationName: 'taskapi-api',
    onPoolError: (err) => logger.warn('idle database connection failed', { error: err }),
  });
  // Auto-pipelining sends the rate-limit scripts of concurrent requests in one write: fewer
  // syscalls on both ends under load, no added latency when idle.
  const redis = createRedis(config, 'taskapi-api', { enableAutoPipelining: true });
  const subscriber = createRedis(config, 'taskapi-api-sub', { enableOfflineQueue: true, maxRetriesPerRequest: null, commandTimeout: undefined });
  const queueRedis = createRedis(config, 'taskapi-api-queue', { commandTimeout: 5_000 });
  const redisCheck = redisReadinessCheck(redis, config);
  for (const [name, client] of [['commands', redis], ['subscriber', subscriber], ['queue', queueRedis]] as const) {
    client.on('error', (err: Error) => logger.warn('redis connection error', { connection: name, error: err.message }));
  }
  const stopReporting = reportWhileWaitingForRedis(config, logger);
  try {
    const redisReady = Promise.all([waitForRedis(redis), waitForRedis(queueRedis)]).catch(async (err: unknown) => {
      // The start fails (a supervisor restarts the process): say why, naming the Sentinels when there are.
      throw new Error(`${(err as Error).message}: ${await describeRedisProblem(config)}`, { cause: err });
    });
    await Promise.all([redisReady, storage.first]);
  } finally {
    stopReporting();
  }

  const repos = createRepositories(db);
  const keyCache = new KeyCache();
  await keyCache.listen(subscriber, logger);
  const taskWaiters = new TaskWaiters(opts.heldRequests?.max ?? MAX_WAITERS, opts.heldRequests?.perAccount ?? MAX_WAITERS_PER_ACCOUNT);
  await taskWaiters.listen(subscriber, logger);
  const verifier = new ApiKeyVerifier(repos.keys, keyCache, logger);
  const taskQueues = createTaskQueues(queueRedis);
  const webhooks = createWebhookQueue(queueRedis);
  const egress = createEgressClient({ allowPrivateNetworks: config.webhookAllowPrivateNetworks, tls: opts.egressTls });
  const metrics = createMetrics({
    ...opts,
    queueSignals: queueSignalReader(queueRedis, taskQueues.queues, () => taskLifecycle.queueFigures.load(), logger),
    // The checks of GET /readyz, as gauges at every scrape.
    readinessChecks,
  });
  const taskLifecycle = createTaskLifecycle({
    config,
    db: db.pool,
    redis,
    schedulerRedis: queueRedis,
    taskQueues,
    webhooks,
    // A cancelled task's prediction is noted for a worker that reaches its model server (docs/models.md).
    predictions: { abandon: (_kind, publicId) => noteCancelledPrediction(redis, publicId) },
    logger,
    // The API ends tasks only by cancelling them.
    onFinished: (task) => metrics.taskE2e.observe({ kind: task.kind, status: 'cancelled' }, e2eSeconds(task.created_at, task.finished_at)),
  });
  // Tasks past their ttl_seconds expire within the sweep's interval on every replica (PostgreSQL
  // decides, so replicas need no lock to agree, and a Redis loss changes nothing).
  const expiry = taskLifecycle.expiry.sweepPeriodically(logger);
  // A creation answers once its task is in its account's line; a job released for an idle worker
  // slot is added meanwhile (the sweeper re-adds one whose adding failed).
  const enqueuer = new Batcher<TaskKind, NewTask, TaskPosition | undefined>(async (kind, tasks) => {
    const { positions } = await taskLifecycle.enqueue.submitAndPlace(kind, tasks, {
      queued: (jobs) => void jobs.catch((err: unknown) => logger.warn('released task jobs not added; the sweeper will add them', { kind, error: (err as Error).message })),
    });
    return tasks.map((t) => positions.get(t.publicId));
  });

  return {
    config,
    logger,
    db,
    repos,
    store,
    readinessChecks,
    fileLinks: new FileLinks(store, config.secretsKey, config.fileUrlTtlSeconds, config.publicBaseUrl),
    modelWebhookTokens: new ModelWebhookTokens(config.secretsKey),
    readTokens: new ReadTokens(config.secretsKey),
    redis,
    subscriber,
    queueRedis,
    taskQueues,
    webhooks,
    egress,
    verifier,
    taskReader: new TaskReader(new TaskReadCache(repos.tasks, taskLifecycle.repair, logger), redis, (ids) => taskLifecycle.queueFigures.positions(ids)),
    taskWaiters,
    taskEventTimings: { ...DEFAULT_TASK_EVENT_TIMINGS, ...opts.taskEventTimings },
    taskCreator: new TaskCreator(repos, store, (accountId, keyId) => verifier.activeTrialPrefixes(accountId, keyId)),
    taskLifecycle,
    expirySweep: expiry,
    enqueueTask: (kind, task) => enqueuer.submit(kind, task),
    rateLimiter: new RateLimiter(redis),
    sessions: new SessionService(config.jwtSecret, redis),
    metrics,
    apiVersions: opts.apiVersions ?? new ApiVersions(),
    lifecycle: { draining: false },
    async close() {
      await expiry.stop();
      taskWaiters.close();
      await egress.close();
      await closeQueues([...Object.values(taskQueues.queues), webhooks.queue]);
      await Promise.allSettled([redis.quit(), subscriber.quit(), queueRedis.quit()]);
      await db.close();
    },
  };
}
