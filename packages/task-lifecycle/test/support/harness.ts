// The lifecycle's tests run against the real stores: the API (which creates and charges tasks
// through its public edge) on a Redis server of the file's own, the test database, the fair
// scheduler and BullMQ queues on that Redis. A "fault" makes one store's writes reject (the
// process is fine, that store is not); a "crash" at a store makes it and every store after it in
// STORE_ORDER reject, which is what a process dying just before that write leaves behind. The
// worker is played by the test: it takes the job the scheduler released (as BullMQ hands it to a
// free slot) and calls the run transitions, as services/worker's processor does.
import { Worker, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import { claimPrediction, noteCancelledPrediction, ORPHANED_PREDICTIONS_KEY, predictionId, taskStatusMarkerKey } from '@taskapi/domain';
import { createLogger } from '@taskapi/logger';
import { deliveryJobId, TASK_QUEUES, type TaskJob } from '@taskapi/queue';
import { FairScheduler } from '@taskapi/scheduler';
import type { TaskKind } from '@taskapi/task-kinds';
import { recreateDatabase, startPrivateRedis, testDatabaseUrl, waitFor, type PrivateRedis } from '@taskapi/testing';
import { createKey, seedAccount, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from '../../../../services/api/test/support/harness';
import { sweepDeliveries } from '../../../../services/webhook-dispatcher/src/domain/sweep-deliveries';
import { STORE_ORDER, StatusMarkers, TaskLifecycle, TaskRows, WorkerSlots, type LifecycleStores, type RunSystem, type StoreName } from '../../src';

export const KIND: TaskKind = 'image-generation';

/** What an injected fault throws: not a platform fault, so nothing waits it out. */
export class InjectedFault extends Error {
  constructor(store: StoreName) {
    super(`injected fault: ${store} unavailable`);
    this.name = 'InjectedFault';
  }
}

/** What a PostgreSQL or Redis outage looks like to a caller: a platform fault, waited out. */
export class InjectedOutage extends Error {
  readonly code = 'ECONNREFUSED';
  constructor(store: StoreName) {
    super(`connect ECONNREFUSED (injected: ${store} down)`);
    this.name = 'InjectedOutage';
  }
}

/** Which stores reject their writes. */
export type Faults = ReadonlySet<StoreName>;

/** The faults in force, switchable while a transition runs; `outage`: they are outages (waited out), not faults. */
export interface FaultSwitch {
  current: Faults;
  outage?: boolean;
}

/** A fault at one store. */
export const faultAt = (store: StoreName): Faults => new Set([store]);
/** A crash just before `store`'s write: it and every later store write nothing. */
export const crashAt = (store: StoreName): Faults => new Set(STORE_ORDER.slice(STORE_ORDER.indexOf(store)));

/** `target` with every method rejecting while `failing()` says so (with what it returns). */
function faulty<T extends object>(target: T, store: StoreName, failing: () => Error | undefined): T {
  return new Proxy(target, {
    get(obj, prop, receiver) {
      const value = Reflect.get(obj, prop, receiver) as unknown;
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        const err = failing();
        return err ? Promise.reject(err) : (value as (...a: unknown[]) => unknown).apply(obj, args);
      };
    },
  });
}

/** What the stores say about one task, to compare with what its status promises. */
export interface TaskState {
  status: number;
  attempts: number;
  errorCode: string | null;
  charges: number;
  refunds: number;
  deliveries: Array<{ id: string; state: string }>;
  /** Whether each delivery's first attempt has its job. */
  deliveryJobs: boolean[];
  marker: string | null;
  /** The scheduler's record of the task (undefined: it holds none). */
  scheduled: string | undefined;
  /** Noted for a worker to cancel its prediction. */
  orphanNoted: boolean;
}

export class Harness {
  private constructor(
    readonly api: TestApi,
    readonly redisServer: PrivateRedis,
    readonly account: TestAccount,
    readonly key: CreatedKey,
    private readonly consumer: Worker<TaskJob>,
    private readonly consumerConnection: Redis,
  ) {}

  /** A database (`<run's>_<database>`) and a Redis server of the test file's own: no other file's tasks or jobs. */
  static async start(database: string): Promise<Harness> {
    const url = testDatabaseUrl(database);
    await recreateDatabase(url);
    const redisServer = await startPrivateRedis();
    const api = await startApi({ DATABASE_URL: url, REDIS_URL: redisServer.url, RATE_LIMIT_PAID_PER_MINUTE: '100000' });
    const account = await seedAccount(api, { credits: 100_000 });
    const key = await createKey(api, account, { type: 'paid' });
    const connection = (api.deps.queueRedis as Redis).duplicate({ maxRetriesPerRequest: null });
    const consumer = new Worker<TaskJob>(TASK_QUEUES[KIND].name, undefined, { connection, autorun: false });
    return new Harness(api, redisServer, account, key, consumer, connection);
  }

  async close(): Promise<void> {
    await this.consumer.close();
    this.consumerConnection.disconnect();
    await this.api.close();
    await this.redisServer.stop();
  }

  /** Between tests: no task left pending, no job or scheduler state left in Redis. */
  async reset(): Promise<void> {
    await this.api.deps.db.pool.query("UPDATE tasks SET status = 40, finished_at = now() WHERE status IN (0, 10)");
    await this.redis.flushdb();
  }

  get redis(): Redis {
    return this.api.deps.queueRedis as Redis;
  }

  /** The worker's stores on the API's connections; `faults` says which of them reject. */
  stores(faults: FaultSwitch = { current: new Set() }): LifecycleStores {
    const d = this.api.deps;
    const real: LifecycleStores = {
      database: new TaskRows(d.db.pool),
      markers: new StatusMarkers(this.redis),
      scheduler: new FairScheduler(this.redis, d.taskQueues, { defaultCap: 10 }),
      queues: d.taskQueues,
      webhooks: d.webhooks,
      // The API's own clean-up: the prediction is noted for a worker that reaches its model server.
      predictions: { abandon: (_kind, publicId) => noteCancelledPrediction(this.redis, publicId) },
    };
    const at = (store: StoreName) => () => (faults.current.has(store) ? (faults.outage ? new InjectedOutage(store) : new InjectedFault(store)) : undefined);
    return {
      database: faulty(real.database, 'database', at('database')),
      markers: faulty(real.markers, 'markers', at('markers')),
      scheduler: faulty(real.scheduler, 'scheduler', at('scheduler')),
      queues: real.queues,
      webhooks: faulty(real.webhooks, 'webhooks', at('webhooks')),
      predictions: faulty(real.predictions, 'predictions', at('predictions')),
    };
  }

  /** A lifecycle on the stores, with a switchable set of faults, and what it logged. */
  lifecycle(faults: FaultSwitch = { current: new Set() }): { lifecycle: TaskLifecycle; warnings: string[] } {
    const warnings: string[] = [];
    const logger = createLogger({ service: 'lifecycle-test', level: 'silent' });
    const warn = logger.warn.bind(logger);
    logger.warn = ((message: string, ...meta: unknown[]) => {
      warnings.push(message);
      return warn(message, ...(meta as []));
    }) as typeof logger.warn;
    return { lifecycle: new TaskLifecycle({ stores: this.stores(faults), logger }), warnings };
  }

  /** One worker process with one slot of the kind, whose runs go through `lifecycle`. */
  worker(lifecycle: TaskLifecycle, shutdown = new AbortController().signal): { runs: RunSystem; slots: WorkerSlots } {
    const reportStarts = () => void runs.heartbeat().catch(() => undefined);
    const slots = new WorkerSlots([KIND], 1, reportStarts);
    const runs = lifecycle.runs({ slots, shutdown });
    return { runs, slots };
  }

  /** Creates a task through the API (charged, in the scheduler), with a callback unless told otherwise, and `extra` fields. */
  async create(opts: { callback?: boolean; extra?: Record<string, unknown> } = {}): Promise<string> {
    const body = { prompt: 'lifecycle', width: 64, height: 64, ...(opts.callback === false ? {} : { callback_url: 'https://receiver.example/hook' }), ...opts.extra };
    const res = await this.api.req('POST', `/api/tasks/${KIND}`, { headers: withKey(this.key), body });
    if (res.status !== 201) throw new Error(`create answered ${res.status}: ${res.text}`);
    return res.body.public_id as string;
  }

  /**
   * The job a free slot would get next: reports the slot idle (so the scheduler releases a task for
   * it), then takes the head of the kind's queue, as BullMQ hands it to the slot.
   */
  async take(runs: RunSystem, publicId: string): Promise<Job<TaskJob>> {
    return waitFor(
      async () => {
        await runs.heartbeat();
        const job = (await this.consumer.getNextJob('test-token', { block: false })) as Job<TaskJob> | undefined;
        if (job && job.data.public_id !== publicId) throw new Error(`took ${job.data.public_id}, expected ${publicId}`);
        return job;
      },
      { timeoutMs: 5_000, what: `the job of ${publicId}` },
    );
  }

  /** The next job of the kind, if one is waiting (a free slot reports itself idle first). */
  async tryTake(runs: RunSystem): Promise<Job<TaskJob> | undefined> {
    await runs.heartbeat();
    return (await this.consumer.getNextJob('test-token', { block: false })) as Job<TaskJob> | undefined;
  }

  /**
   * A healthy worker and both sweepers, until the task is terminal and the scheduler holds nothing
   * of it: every job it gets is run to completion (or skipped, for a task already terminal).
   */
  async settle(publicId: string): Promise<TaskState> {
    const { lifecycle } = this.lifecycle();
    const { runs, slots } = this.worker(lifecycle);
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline) {
      await this.repair();
      const job = await this.tryTake(runs);
      if (job) {
        const started = await runs.start({ kind: KIND, publicId: job.data.public_id, release: job.data.release ?? 1, accountId: job.data.account_id });
        if ('run' in started) {
          await runs.complete(started.run, { result: { settled: true }, files: [] });
          slots.ended(started.run);
        }
        await this.finishJob(job);
        continue;
      }
      const state = await this.state(publicId);
      if (state.status >= 20 && state.scheduled === undefined && (await this.running()) === 0) return state;
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    throw new Error(`${publicId} did not settle: ${JSON.stringify(await this.state(publicId))}`);
  }

  /** The job is done with (BullMQ would complete it when the processor returns). */
  async finishJob(job: Job<TaskJob>): Promise<void> {
    await job.moveToCompleted('done', 'test-token', false);
  }

  /** The process holding the job died: BullMQ gives the job to another worker (as after its lock expires). */
  async crashJob(job: Job<TaskJob>): Promise<void> {
    await job.moveToDelayed(Date.now(), 'test-token');
  }

  /** A prediction on a model server for the task's attempt, as the Cog engine records one. */
  async leavePrediction(publicId: string, attempt = 1): Promise<void> {
    await claimPrediction(this.redis, publicId, predictionId(publicId, attempt), KIND);
  }

  /** The task's sweeper and the dispatcher's (which sends a delivery whose job was never added), with every store healthy. */
  async repair(): Promise<void> {
    const { lifecycle } = this.lifecycle();
    await lifecycle.repair.sweep(KIND, 0);
    await sweepDeliveries(this.api.deps.db.pool, this.api.deps.webhooks, 0);
  }

  async state(publicId: string): Promise<TaskState> {
    const db = this.api.deps.db.pool;
    const task = (await db.query<{ id: string; status: number; attempts: number; error_code: string | null }>('SELECT id, status, attempts, error_code FROM tasks WHERE public_id = $1', [publicId])).rows[0]!;
    const ledger = (await db.query<{ entry_type: string }>('SELECT entry_type::text FROM credit_ledger WHERE task_id = $1', [task.id])).rows;
    const deliveries = (await db.query<{ id: string; state: string }>('SELECT id, state::text FROM webhook_deliveries WHERE task_id = $1', [task.id])).rows;
    const deliveryJobs = await Promise.all(deliveries.map(async (d) => (await this.api.deps.webhooks.queue.getJob(deliveryJobId(d.id, 1))) !== undefined));
    const records = await new FairScheduler(this.redis, this.api.deps.taskQueues, { defaultCap: 10 }).lookup([publicId]);
    return {
      status: task.status,
      attempts: task.attempts,
      errorCode: task.error_code,
      charges: ledger.filter((l) => l.entry_type === 'charge').length,
      refunds: ledger.filter((l) => l.entry_type === 'refund').length,
      deliveries,
      deliveryJobs,
      marker: await this.redis.get(taskStatusMarkerKey(this.account.id, publicId)),
      scheduled: records.get(publicId)?.state,
      orphanNoted: (await this.redis.sismember(ORPHANED_PREDICTIONS_KEY, publicId)) === 1,
    };
  }

  /** What the API answers for the task (readers check PostgreSQL within 5 s of a lost marker write). */
  async read(publicId: string): Promise<{ status: number; error_code: string | null }> {
    return (await this.api.req('GET', `/api/tasks/${publicId}`, { headers: withKey(this.key) })).body;
  }

  /** Tasks of the account the scheduler counts as running. */
  async running(): Promise<number> {
    return (await new FairScheduler(this.redis, this.api.deps.taskQueues, { defaultCap: 10 }).accountLoad(this.account.id)).running;
  }
}
