// The asynchronous half: image tasks created over HTTP, run by worker processes, announced by
// dispatcher processes to the bench's HTTPS receiver.
//   - lightWebhookLatency: one task at a time, creation → signed webhook received (64×64 image);
//   - pipelineRun: a burst of tasks with W workers and D dispatchers: tasks/s end to end, the time
//     each task spent in each stage, and the depth of each queue over the run, so the stage that
//     saturates first shows as the one where tasks wait.
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type pg from 'pg';
import { webhookSignature } from '@taskapi/crypto';
import { TASK_QUEUES, WEBHOOK_QUEUE } from '@taskapi/queue';
import { FLOOR_TASK_QUEUE, FLOOR_WEBHOOK_QUEUE } from './floor-pipeline';
import { ROOT, startBuilt, startProcess, stop } from './processes';
import { cpuMs, statFields, treeCpuMs } from './runtime-figures';
import { nowMs, type BenchReceiver } from './receiver';
import { median, percentile } from './stats';

export interface PipelineContext {
  base: string;
  key: string;
  /** Environment of the services (REDIS_URL, DATABASE_URL, NODE_EXTRA_CA_CERTS, …). */
  env: NodeJS.ProcessEnv;
  /** Where the queues are sampled; undefined (a Redis Cluster) = not sampled. */
  redisUrl: string | undefined;
  pool: pg.Pool;
  receiver: BenchReceiver;
  /** The API process, whose CPU time per task is reported. */
  apiPid: number;
  /** The bench account's webhook secret, to check each light-load webhook's signature. */
  webhookSecret: string;
  /** The floor's API (bench/floor-pipeline.ts), started by startFloor, and its processes' environment. */
  floor?: FloorApi;
}

export interface FloorApi {
  base: string;
  pid: number;
  env: NodeJS.ProcessEnv;
  stop(): Promise<void>;
}

const FLOOR = path.join(ROOT, 'bench/floor-pipeline.ts');

function startFloorProcess(role: 'api' | 'worker' | 'dispatcher', env: NodeJS.ProcessEnv): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  // One process per role (tsx as a loader, not its CLI's parent process): its CPU time is its own.
  // With BENCH_CPU_PROF_DIR set, each writes a CPU profile there when it stops, as the services do.
  const dir = process.env.BENCH_CPU_PROF_DIR;
  const profile = dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=floor-${role}-${Date.now()}.cpuprofile`] : [];
  return startProcess([process.execPath, [...profile, '--import', 'tsx', FLOOR, role]], env, new RegExp(`floor ${role} ready (\\d+)`));
}

/**
 * Starts the floor's API process (its workers and dispatchers start with each run, as the
 * platform's do), for the account and key given, its files under a temporary directory.
 */
export async function startFloor(env: NodeJS.ProcessEnv, account: { accountId: string; keyId: string; webhookSecret: string }, port: number): Promise<FloorApi> {
  const filesDir = fs.mkdtempSync(path.join(os.tmpdir(), 'taskapi-floor-'));
  const floorEnv = { ...env, PORT: String(port), FLOOR_ACCOUNT_ID: account.accountId, FLOOR_KEY_ID: account.keyId, FLOOR_WEBHOOK_SECRET: account.webhookSecret, FLOOR_FILES_DIR: filesDir };
  const { child } = await startFloorProcess('api', floorEnv);
  return {
    base: `http://127.0.0.1:${port}`,
    pid: child.pid!,
    env: floorEnv,
    async stop() {
      await stop(child);
      fs.rmSync(filesDir, { recursive: true, force: true });
    },
  };
}

/** What a run drives: the platform's services, or the floor's. */
export type Stack = 'platform' | 'floor';

/**
 * The PostgreSQL postmaster's and the Redis server's process ids, when they run on this machine
 * (the bench's own connections tell: a backend's parent is the postmaster; Redis names its pid).
 */
export async function serverPids(pool: pg.Pool, redis: Redis | undefined): Promise<{ postgres: number | undefined; redis: number | undefined }> {
  const local = (pid: number | undefined) => (pid !== undefined && fs.existsSync(`/proc/${pid}/stat`) ? pid : undefined);
  const backend = Number((await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid);
  const parent = statFields(backend)?.[1];
  const postmaster = parent === undefined ? undefined : Number(parent);
  const info = redis ? await redis.info('server') : '';
  const redisPid = /^process_id:(\d+)/m.exec(info)?.[1];
  return { postgres: local(postmaster), redis: local(redisPid === undefined ? undefined : Number(redisPid)) };
}

/** The bench database's transactions so far, and the Redis server's commands (NaN without a sampler connection). */
export async function roundTrips(
  pool: pg.Pool,
  redis: Redis | undefined,
): Promise<{ transactions: number; redisCommands: number; byCommand: Map<string, number>; usecByCommand: Map<string, number> }> {
  const { rows } = await pool.query<{ n: string }>('SELECT (xact_commit + xact_rollback)::text AS n FROM pg_stat_database WHERE datname = current_database()');
  const info = redis ? await redis.info('stats') : '';
  const commands = /^total_commands_processed:(\d+)/m.exec(info)?.[1];
  // Calls and the server's µs by command (those a script makes counted under their own names, and
  // the script's too: a script's µs include its commands').
  const byCommand = new Map<string, number>();
  const usecByCommand = new Map<string, number>();
  for (const m of (redis ? await redis.info('commandstats') : '').matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    byCommand.set(m[1]!, Number(m[2]));
    usecByCommand.set(m[1]!, Number(m[3]));
  }
  return { transactions: Number(rows[0]!.n), redisCommands: commands === undefined ? NaN : Number(commands), byCommand, usecByCommand };
}

/** Concurrent creators in a pipeline run, and each worker process's concurrency. */
const CREATORS = 16;
/** Tasks each run sends through before it measures. */
export const PIPELINE_WARM_UP_TASKS = 16;
const WORKER_CONCURRENCY = 4;

/** The floor's dispatchers take as many deliveries at once as the platform's do by default (DISPATCHER_CONCURRENCY). */
const DISPATCHER_CONCURRENCY = 20;

async function startServices(ctx: PipelineContext, stack: Stack, workers: number, dispatchers: number): Promise<{ workers: ChildProcess[]; dispatchers: ChildProcess[]; all: ChildProcess[] }> {
  const env = { ...ctx.env, WORKER_KINDS: 'image-generation', WORKER_CONCURRENCY: String(WORKER_CONCURRENCY) };
  const floor = floorOf(ctx, stack);
  const start =
    floor === undefined
      ? { worker: () => startBuilt('worker', env), dispatcher: () => startBuilt('webhook-dispatcher', env) }
      : {
          worker: async () => (await startFloorProcess('worker', { ...floor.env, FLOOR_CONCURRENCY: String(WORKER_CONCURRENCY) })).child,
          dispatcher: async () => (await startFloorProcess('dispatcher', { ...floor.env, FLOOR_CONCURRENCY: String(DISPATCHER_CONCURRENCY) })).child,
        };
  const started = {
    workers: await Promise.all(Array.from({ length: workers }, start.worker)),
    dispatchers: await Promise.all(Array.from({ length: dispatchers }, start.dispatcher)),
  };
  return { ...started, all: [...started.workers, ...started.dispatchers] };
}

function floorOf(ctx: PipelineContext, stack: Stack): FloorApi | undefined {
  if (stack === 'platform') return undefined;
  if (!ctx.floor) throw new Error('the floor was not started');
  return ctx.floor;
}

const cpuOf = (children: ChildProcess[]) => children.reduce((sum, c) => sum + cpuMs(c.pid!), 0);

async function createTask(ctx: PipelineContext, stack: Stack, prompt: string, callbackUrl: string): Promise<string> {
  const floor = floorOf(ctx, stack);
  const res = await fetch(floor ? `${floor.base}/tasks` : `${ctx.base}/api/tasks/image-generation`, {
    method: 'POST',
    headers: { 'x-api-key': ctx.key, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt, width: 64, height: 64, callback_url: callbackUrl }),
  });
  if (res.status !== 202 && res.status !== 201) throw new Error(`creation answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { public_id: string }).public_id;
}

export interface LightWebhookFigures {
  p50: number;
  p95: number;
  /** Of those, the creation request alone. */
  createP50: number;
  verified: number;
  samples: number;
  /** Medians (ms) of each hand-off, from the database's timestamps and the receiver's clock. */
  stages: Array<[name: string, ms: number]>;
}

/**
 * One worker, one dispatcher, one 64×64 image task at a time: milliseconds from sending the
 * creation to the webhook's arrival, its signature checked with the account's secret.
 */
export async function lightWebhookLatency(ctx: PipelineContext, samples: number, stack: Stack = 'platform'): Promise<LightWebhookFigures> {
  const services = await startServices(ctx, stack, 1, 1);
  try {
    const route = `/light-${stack}-${Date.now()}`;
    const latencies: number[] = [];
    const creations: number[] = [];
    const sent = new Map<string, { t0: number; received: number }>();
    const warmUp = 3;
    for (let i = 0; i < warmUp + samples; i++) {
      const t0 = nowMs();
      const publicId = await createTask(ctx, stack, `light ${i}`, ctx.receiver.url(route));
      const created = nowMs();
      const arrivals = await ctx.receiver.waitFor(route, i + 1, 30_000);
      if (i >= warmUp) {
        latencies.push(arrivals[i]!.at - t0);
        creations.push(created - t0);
        sent.set(publicId, { t0, received: arrivals[i]!.at });
      }
    }
    const verified = ctx.receiver
      .arrivals(route)
      .filter((a) => a.headers['x-signature'] === webhookSignature(ctx.webhookSecret, a.body)).length;
    latencies.sort((a, b) => a - b);
    const stages = await handOffs(ctx.pool, sent);
    return { p50: percentile(latencies, 50), p95: percentile(latencies, 95), createP50: median(creations), verified, samples: warmUp + samples, stages };
  } finally {
    await Promise.all(services.all.map(stop));
  }
}

/**
 * Where one light-load task's time goes, by the timestamps each hand-off leaves: the task row's
 * created_at (the API's insert), started_at (the worker's claim), finished_at (the terminal
 * statement), the first attempt's started_at (taken by the dispatcher just before its claim
 * statement) and the receiver's arrival time. Same machine, so one clock.
 */
async function handOffs(pool: pg.Pool, sent: Map<string, { t0: number; received: number }>): Promise<Array<[string, number]>> {
  const { rows } = await pool.query<{ public_id: string; created: number; started: number; finished: number; claimed: number }>(
    `SELECT t.public_id, extract(epoch FROM t.created_at) * 1000 AS created, extract(epoch FROM t.started_at) * 1000 AS started,
            extract(epoch FROM t.finished_at) * 1000 AS finished, extract(epoch FROM w.started_at) * 1000 AS claimed
       FROM tasks t JOIN webhook_deliveries d ON d.task_id = t.id JOIN webhook_attempts w ON w.delivery_id = d.id AND w.attempt_number = 1
      WHERE t.public_id = ANY($1::text[])`,
    [[...sent.keys()]],
  );
  const stage = (f: (r: (typeof rows)[number], s: { t0: number; received: number }) => number) =>
    median(rows.map((r) => f(r, sent.get(r.public_id)!)));
  return [
    ['request sent → task row inserted (API)', stage((r, s) => Number(r.created) - s.t0)],
    ['inserted → worker claimed it (commit, enqueue, pickup, claim)', stage((r) => Number(r.started) - Number(r.created))],
    ['claimed → finished statement (marker, engine, store)', stage((r) => Number(r.finished) - Number(r.started))],
    ['finished → dispatcher starts the claim (marker, job, pickup; load and decrypt when its secret is not cached)', stage((r) => Number(r.claimed) - Number(r.finished))],
    ['claim → webhook received (claim, sign, POST)', stage((r, s) => s.received - Number(r.claimed))],
  ];
}

export interface PipelineRun {
  workers: number;
  dispatchers: number;
  tasks: number;
  seconds: number;
  tasksPerSecond: number;
  /** Creation → webhook received. */
  latencyP50: number;
  latencyP99: number;
  /** Per stage, p50 and p95 in ms: waiting for a worker, running, finished → webhook received. */
  queueWait: [number, number];
  run: [number, number];
  delivery: [number, number];
  /** Deepest each queue got (waiting jobs), sampled every 100 ms. */
  maxTaskQueue: number;
  maxWebhookQueue: number;
  /**
   * CPU time per task (ms) of the API, all workers and all dispatchers together, and of the
   * PostgreSQL server (every backend and background process) and the Redis server; NaN where the
   * bench cannot see the server's process (another machine, a Redis Cluster).
   */
  cpuPerTask: { api: number; workers: number; dispatchers: number; postgres: number; redis: number };
  /**
   * PostgreSQL transactions (committed and rolled back, in the bench database: a statement outside
   * a transaction is one) and Redis commands (the server's total, the bench's queue sampling
   * included: about 20 a second) per task, over the run.
   */
  roundTripsPerTask: { transactions: number; redisCommands: number; topRedisCommands: Array<[string, number]> };
  /** The stage where work piled up most. */
  saturated: string;
}

/** Which stage saturates: the queue that backed up beyond what the creators alone explain. */
export function saturatedStage(r: Pick<PipelineRun, 'maxTaskQueue' | 'maxWebhookQueue' | 'queueWait' | 'delivery'>): string {
  if (r.maxTaskQueue <= CREATORS && r.maxWebhookQueue <= CREATORS) return 'creation (the API; neither queue backed up)';
  return r.maxTaskQueue >= r.maxWebhookQueue ? 'workers (the task queue backed up)' : 'dispatch (the webhook queue backed up)';
}

/**
 * `perSecond`: creations at that steady rate (the i-th at `i / perSecond` s from the start, by the
 * same 16 creators) instead of as fast as the API takes them: the cost of a task at a load the
 * pipeline keeps up with, where per-job overheads (BullMQ's fetch, a worker waking for one job)
 * are not shared by a batch.
 */
export async function pipelineRun(ctx: PipelineContext, opts: { workers: number; dispatchers: number; tasks: number; perSecond?: number; stack?: Stack }): Promise<PipelineRun> {
  const stack = opts.stack ?? 'platform';
  const floor = floorOf(ctx, stack);
  const services = await startServices(ctx, stack, opts.workers, opts.dispatchers);
  const apiPid = floor?.pid ?? ctx.apiPid;
  const sampler = ctx.redisUrl === undefined ? undefined : new Redis(ctx.redisUrl, { maxRetriesPerRequest: 1 });
  const taskQueue = sampler && new Queue(floor ? FLOOR_TASK_QUEUE : TASK_QUEUES['image-generation'].name, { connection: sampler });
  const webhookQueue = sampler && new Queue(floor ? FLOOR_WEBHOOK_QUEUE : WEBHOOK_QUEUE.name, { connection: sampler });
  let maxTaskQueue = 0;
  let maxWebhookQueue = 0;
  let sampling = sampler !== undefined;
  const samplingDone = (async () => {
    while (sampling && taskQueue && webhookQueue) {
      const [t, w] = await Promise.all([taskQueue.getWaitingCount(), webhookQueue.getWaitingCount()]);
      maxTaskQueue = Math.max(maxTaskQueue, t);
      maxWebhookQueue = Math.max(maxWebhookQueue, w);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  try {
    const route = `/pipeline-${stack}-${opts.workers}w-${opts.dispatchers}d-${Date.now()}`;
    const createdAt = new Map<string, number>();
    // Warm-up: the processes' first tasks load modules, compile and open connections; that is
    // not a task's cost, so it is spent before the measurement starts.
    const warmRoute = `${route}-warm-up`;
    await Promise.all(Array.from({ length: PIPELINE_WARM_UP_TASKS }, (_, i) => createTask(ctx, stack, `warm-up ${i}`, ctx.receiver.url(warmRoute))));
    await ctx.receiver.waitFor(warmRoute, PIPELINE_WARM_UP_TASKS, 60_000);
    maxTaskQueue = 0;
    maxWebhookQueue = 0;
    const servers = await serverPids(ctx.pool, sampler);
    const serverCpu = () => ({ postgres: servers.postgres ? treeCpuMs(servers.postgres) : NaN, redis: servers.redis ? cpuMs(servers.redis) : NaN });
    const cpuBefore = { api: cpuMs(apiPid), workers: cpuOf(services.workers), dispatchers: cpuOf(services.dispatchers), ...serverCpu() };
    const tripsBefore = await roundTrips(ctx.pool, sampler);
    const started = nowMs();
    let next = 0;
    await Promise.all(
      Array.from({ length: CREATORS }, async () => {
        while (next < opts.tasks) {
          const i = next++;
          if (opts.perSecond) {
            const due = started + (1000 * i) / opts.perSecond - nowMs();
            if (due > 0) await new Promise((r) => setTimeout(r, due));
          }
          const t0 = nowMs();
          createdAt.set(await createTask(ctx, stack, `pipeline ${i}`, ctx.receiver.url(route)), t0);
        }
      }),
    );
    const arrivals = await ctx.receiver.waitFor(route, opts.tasks, 300_000);
    const perTask = (after: number, before: number) => (after - before) / opts.tasks;
    const serverCpuAfter = serverCpu();
    const cpuPerTask = {
      api: perTask(cpuMs(apiPid), cpuBefore.api),
      workers: perTask(cpuOf(services.workers), cpuBefore.workers),
      dispatchers: perTask(cpuOf(services.dispatchers), cpuBefore.dispatchers),
      postgres: perTask(serverCpuAfter.postgres, cpuBefore.postgres),
      redis: perTask(serverCpuAfter.redis, cpuBefore.redis),
    };
    // PostgreSQL's counters are published by each backend when it goes idle, at most once a
    // second: read them once every backend has had the chance.
    await new Promise((r) => setTimeout(r, 1_500));
    const tripsAfter = await roundTrips(ctx.pool, sampler);
    const topRedisCommands = [...tripsAfter.byCommand]
      .map(([name, calls]) => [name, perTask(calls, tripsBefore.byCommand.get(name) ?? 0)] as [string, number])
      .sort((a, b) => b[1] - a[1])
      .slice(0, 8);
    const roundTripsPerTask = {
      transactions: perTask(tripsAfter.transactions, tripsBefore.transactions),
      redisCommands: perTask(tripsAfter.redisCommands, tripsBefore.redisCommands),
      topRedisCommands,
    };
    const received = new Map(arrivals.map((a) => [(JSON.parse(a.body.toString()) as { public_id: string }).public_id, a.at]));
    const last = Math.max(...received.values());
    const { rows } = await ctx.pool.query<{ public_id: string; created: number; started: number; finished: number }>(
      `SELECT public_id, extract(epoch FROM created_at) * 1000 AS created, extract(epoch FROM started_at) * 1000 AS started,
              extract(epoch FROM finished_at) * 1000 AS finished
         FROM tasks WHERE public_id = ANY($1::text[])`,
      [[...createdAt.keys()]],
    );
    const stage = (f: (r: (typeof rows)[number]) => number): [number, number] => {
      const xs = rows.map(f).sort((a, b) => a - b);
      return [percentile(xs, 50), percentile(xs, 95)];
    };
    const latencies = [...createdAt].map(([id, t0]) => (received.get(id) ?? NaN) - t0).sort((a, b) => a - b);
    const seconds = (last - started) / 1000;
    const figures = {
      workers: opts.workers,
      dispatchers: opts.dispatchers,
      tasks: opts.tasks,
      seconds,
      tasksPerSecond: opts.tasks / seconds,
      latencyP50: percentile(latencies, 50),
      latencyP99: percentile(latencies, 99),
      queueWait: stage((r) => Number(r.started) - Number(r.created)),
      run: stage((r) => Number(r.finished) - Number(r.started)),
      delivery: stage((r) => (received.get(r.public_id) ?? NaN) - Number(r.finished)),
      maxTaskQueue,
      maxWebhookQueue,
      cpuPerTask,
      roundTripsPerTask,
    };
    return { ...figures, saturated: saturatedStage(figures) };
  } finally {
    sampling = false;
    await samplingDone;
    await Promise.all([taskQueue?.close(), webhookQueue?.close()]);
    sampler?.disconnect();
    await Promise.all(services.all.map(stop));
  }
}

/** CPU ms per task of every process the bench could see (the API, workers, dispatchers, PostgreSQL, Redis). */
export function cpuTotal(c: PipelineRun['cpuPerTask']): number {
  return [c.api, c.workers, c.dispatchers, c.postgres, c.redis].filter((x) => !Number.isNaN(x)).reduce((a, b) => a + b, 0);
}

/** Medians over rounds of the same run: each process's CPU per task, their total, round trips, tasks/s and e2e p50. */
export interface RunMedians {
  cpu: PipelineRun['cpuPerTask'];
  total: number;
  transactions: number;
  redisCommands: number;
  topRedisCommands: Array<[string, number]>;
  tasksPerSecond: number;
  latencyP50: number;
}

export function runMedians(runs: PipelineRun[]): RunMedians {
  const of = (f: (r: PipelineRun) => number) => median(runs.map(f));
  const names = new Set(runs.flatMap((r) => r.roundTripsPerTask.topRedisCommands.map(([name]) => name)));
  const topRedisCommands = [...names]
    .map((name): [string, number] => [name, of((r) => r.roundTripsPerTask.topRedisCommands.find(([n]) => n === name)?.[1] ?? 0)])
    .sort((a, b) => b[1] - a[1])
    .slice(0, 8);
  return {
    cpu: {
      api: of((r) => r.cpuPerTask.api),
      workers: of((r) => r.cpuPerTask.workers),
      dispatchers: of((r) => r.cpuPerTask.dispatchers),
      postgres: of((r) => r.cpuPerTask.postgres),
      redis: of((r) => r.cpuPerTask.redis),
    },
    total: of((r) => cpuTotal(r.cpuPerTask)),
    transactions: of((r) => r.roundTripsPerTask.transactions),
    redisCommands: of((r) => r.roundTripsPerTask.redisCommands),
    topRedisCommands,
    tasksPerSecond: of((r) => r.tasksPerSecond),
    latencyP50: of((r) => r.latencyP50),
  };
}
