import { CancelSystem } from './systems/cancel-system';
import { CapacitySystem } from './systems/capacity-system';
import { EnqueueSystem } from './systems/enqueue-system';
import { ExpireSystem } from './systems/expire-system';
import { RepairSystem } from './systems/repair-system';
import { RunSystem, type RunSystemOptions } from './systems/run-system';
import type { Cluster, Redis } from 'ioredis';
import type { Config } from '@taskapi/config';
import type { SqlExecutor } from '@taskapi/db';
import type { Logger } from '@taskapi/logger';
import type { TaskQueues, WebhookQueue } from '@taskapi/queue';
import { createTaskScheduler, type TaskScheduler } from '@taskapi/scheduler';
import { NO_PREDICTIONS, StatusMarkers, TaskRows, type LifecycleResources, type PredictionCleanup } from './stores';
import { TransitionWriter } from './transition';

/**
 * The one owner of a task's life (docs/architecture.md, "A task's life"): every transition is a
 * method of one of its systems, and each writes the stores in STORE_ORDER. Routes, processors and
 * sweepers call it; nothing else writes a task's status, its marker or the scheduler.
 * - `enqueue`: a created task joins the scheduler (the API);
 * - `runs(…)`: start, progress, complete, fail, retry, hand back, skip (a worker's runs);
 * - `cancels`: cancel, one task or many (the API);
 * - `expiry`: tasks past their `ttl_seconds` expire (every replica);
 * - `repair`: the sweeper, the end of a task whose job gave up, a reader's marker seed;
 * - `capacity`: the accounts' caps.
 */
export class TaskLifecycle {
  readonly enqueue: EnqueueSystem;
  readonly cancels: CancelSystem;
  readonly repair: RepairSystem;
  readonly capacity: CapacitySystem;
  readonly expiry: ExpireSystem;
  /** The scheduler's figures, for metrics and the console (reads only). */
  readonly queueFigures: Pick<TaskScheduler, 'load' | 'accountLoad' | 'lookup' | 'inService' | 'positions' | 'waiting' | 'accountsOf' | 'accountGroups'>;
  private readonly writer: TransitionWriter;

  constructor(private readonly resources: LifecycleResources) {
    this.writer = new TransitionWriter(resources.logger);
    this.enqueue = new EnqueueSystem(resources);
    this.cancels = new CancelSystem(resources, this.writer);
    this.repair = new RepairSystem(resources, this.writer);
    this.capacity = new CapacitySystem(resources);
    this.expiry = new ExpireSystem(resources, this.writer);
    const { scheduler } = resources.stores;
    this.queueFigures = {
      load: () => scheduler.load(),
      accountLoad: (accountId) => scheduler.accountLoad(accountId),
      lookup: (ids) => scheduler.lookup(ids),
      inService: (kind) => scheduler.inService(kind),
      positions: (ids) => scheduler.positions(ids),
      waiting: (kind, offset, count) => scheduler.waiting(kind, offset, count),
      accountsOf: (kind) => scheduler.accountsOf(kind),
      accountGroups: (accountId) => scheduler.accountGroups(accountId),
    };
  }

  /** A task's status in PostgreSQL, or null when it does not exist (a read). */
  taskStatus(publicId: string): Promise<number | null> {
    return this.resources.stores.database.status(publicId);
  }

  /** The run transitions of one worker process (its slots, its shutdown signal). */
  runs(worker: RunSystemOptions): RunSystem {
    return new RunSystem(this.resources, this.writer, worker);
  }
}

/** What `createTaskLifecycle` builds the stores from. */
export interface LifecycleDeps {
  config: Pick<Config, 'accountMaxRunning' | 'benchFifoScheduling'>;
  /** PostgreSQL (the pool). */
  db: SqlExecutor;
  /** Markers, progress and task events (keys with the account's hash tag). */
  redis: Redis | Cluster;
  /** The scheduler's connection (the task queues' own, in the API); `redis` when not given. */
  schedulerRedis?: Redis | Cluster;
  taskQueues: TaskQueues;
  webhooks: Pick<WebhookQueue, 'enqueueAttempt'>;
  /** Default: no model servers, nothing to clean up. */
  predictions?: PredictionCleanup;
  logger: Logger;
  onFinished?: LifecycleResources['onFinished'];
}

/**
 * The lifecycle on a service's connections: the only place the scheduler, the task statements and
 * the marker writes are made, so no service holds them to write with.
 */
export function createTaskLifecycle(deps: LifecycleDeps): TaskLifecycle {
  const scheduler = createTaskScheduler(deps.config, deps.schedulerRedis ?? deps.redis, deps.taskQueues, deps.logger);
  return new TaskLifecycle({
    stores: {
      database: new TaskRows(deps.db),
      markers: new StatusMarkers(deps.redis),
      scheduler,
      queues: deps.taskQueues,
      webhooks: deps.webhooks,
      predictions: deps.predictions ?? NO_PREDICTIONS,
    },
    logger: deps.logger,
    onFinished: deps.onFinished,
  });
}

/**
 * The scheduler's figures alone (reads: no task changes state), for a process that only reports
 * them (`npm run admin -- queues`).
 */
export function schedulerFigures(config: Pick<Config, 'accountMaxRunning' | 'benchFifoScheduling'>, redis: Redis | Cluster, logger: Pick<Logger, 'warn'>): Pick<TaskScheduler, 'accountsOf' | 'load'> {
  const noQueues = {
    addRuns: () => Promise.reject(new Error('the scheduler figures release nothing')),
    removeRun: () => Promise.reject(new Error('the scheduler figures remove nothing')),
  };
  const scheduler = createTaskScheduler(config, redis, noQueues, logger);
  return { accountsOf: (kind) => scheduler.accountsOf(kind), load: () => scheduler.load() };
}
