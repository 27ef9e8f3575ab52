// Section `fairness` of `npm run bench` (docs/fair-scheduling.md): what fair scheduling costs and
// what it buys, against first in, first out in the same run. Each mode is an API and one worker
// process (concurrency 4) on a Redis database of its own: `fair` as shipped, and `fifo`, the
// bench-only BENCH_FIFO_SCHEDULING (production refuses it). Both run with NODE_ENV=test, which the
// FIFO switch needs; it changes nothing on these paths.
//   - pipeline tasks/s: N image tasks (64x64, no callback) created by 16 concurrent clients, from
//     one account and from 100 accounts, creation of the first → the last one finished (the
//     database's clock); rounds interleaved fifo, fair, fifo, …;
//   - B's wait: account A creates a burst of 512x512 image tasks, then account B creates one: how
//     long B's waited to start, against the median run time of A's tasks.
import type { ChildProcess } from 'node:child_process';
import type pg from 'pg';
import { Redis } from 'ioredis';
import { claimRedisDb, freePort } from '@taskapi/testing';
import { roundTrips } from './pipeline-figures';
import { startApi, startBuilt, stop } from './processes';
import { cpuMs, treeCpuMs } from './runtime-figures';
import { median } from './stats';

export type Mode = 'fair' | 'fifo';
export const MODES: readonly Mode[] = ['fifo', 'fair'];

export interface FairnessContext {
  /** The services' environment (DATABASE_URL, secrets, …). */
  env: NodeJS.ProcessEnv;
  pool: pg.Pool;
  /** Paid keys of 100 accounts with large balances; the first is the one-account runs'. */
  keys: string[];
  /** A Redis database per mode, emptied before each start. */
  redis: Record<Mode, string>;
  /** The PostgreSQL postmaster's process id when it runs on this machine (its whole tree's CPU is counted). */
  postgresPid: number | undefined;
}

export interface FairnessFigures {
  /** Median tasks/s per mode, for one account and for 100. */
  one: Record<Mode, number>;
  many: Record<Mode, number>;
  /** Per mode, the median over rounds of (FIFO − mode) / FIFO, in %: positive = slower than FIFO. */
  overheadOne: Record<Mode, number>;
  overheadMany: Record<Mode, number>;
  /** CPU ms per task (median over the 100-account rounds) of the API, the worker, the PostgreSQL server and the Redis server, per mode. */
  cpu: Record<Mode, Cpu>;
  /** Median over the 100-account rounds of fair's CPU per task minus FIFO's (all four processes), ms. */
  fairCostMs: number;
  /**
   * Per mode, medians over the 100-account rounds of PostgreSQL transactions per task (the bench's
   * own polling for the last finish included) and Redis commands per task (the server's, of every database).
   */
  trips: Record<Mode, Trips>;
  /**
   * Per mode, the Redis server's µs and calls per task by command (medians over the 100-account
   * rounds), largest first: a script's µs include the commands it ran, which are listed under
   * their own names too.
   */
  redisByCommand: Record<Mode, ByCommand[]>;
  /** B's wait to start behind A's burst, and A's median run time, per mode (ms). */
  wait: Record<Mode, { bWaitMs: number; runMs: number; burst: number }>;
}

const CREATORS = 16;
const CONCURRENCY = 4;

export interface Cpu {
  api: number;
  worker: number;
  postgres: number;
  redis: number;
}

/** PostgreSQL transactions and Redis commands per task of a run. */
interface Trips {
  transactions: number;
  redisCommands: number;
}

export interface ByCommand {
  name: string;
  usec: number;
  calls: number;
}

/** The counters so far: transactions, Redis commands, and the Redis server's calls and µs by command. */
async function tripCounts(pool: pg.Pool, redisUrl: string): ReturnType<typeof roundTrips> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  try {
    return await roundTrips(pool, redis);
  } finally {
    redis.disconnect();
  }
}

/** CPU ms per task of the four processes (PostgreSQL left out where the bench cannot see it). */
export const cpuSum = (c: Cpu) => c.api + c.worker + (Number.isNaN(c.postgres) ? 0 : c.postgres) + c.redis;

interface Running {
  base: string;
  api: ChildProcess;
  worker: ChildProcess;
}

/** The Redis server's own CPU time (ms), from INFO: what every command of every client cost it. */
async function redisCpuMs(url: string): Promise<number> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    const info = await redis.info('cpu');
    const value = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(info)?.[1] ?? NaN);
    return (value('used_cpu_sys') + value('used_cpu_user')) * 1000;
  } finally {
    redis.disconnect();
  }
}

async function startMode(ctx: FairnessContext, mode: Mode): Promise<Running> {
  await claimRedisDb(ctx.redis[mode]);
  const port = await freePort();
  const env = {
    ...ctx.env,
    NODE_ENV: 'test',
    REDIS_URL: ctx.redis[mode],
    PORT: String(port),
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    BENCH_FIFO_SCHEDULING: mode === 'fifo' ? 'true' : 'false',
    WORKER_KINDS: 'image-generation',
    WORKER_CONCURRENCY: String(CONCURRENCY),
  };
  const api = await startApi(env);
  const worker = await startBuilt('worker', env);
  return { base: `http://127.0.0.1:${port}`, api, worker };
}

async function create(base: string, key: string, size: number): Promise<string> {
  const res = await fetch(`${base}/api/tasks/image-generation`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'fairness', width: size, height: size }),
  });
  if (res.status !== 201) throw new Error(`creation answered ${res.status}: ${await res.text()}`);
  return ((await res.json()) as { public_id: string }).public_id;
}

async function waitForCompletion(pool: pg.Pool, ids: string[]): Promise<void> {
  const deadline = Date.now() + 300_000;
  for (;;) {
    const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM tasks WHERE public_id = ANY($1) AND status IN (20, 30, 40)', [ids]);
    if (rows[0]!.n === ids.length) return;
    if (Date.now() > deadline) throw new Error(`${ids.length - rows[0]!.n} of ${ids.length} tasks did not finish`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Tasks/s from the first creation to the last finish (both by the database's clock), and CPU ms per task. */
async function pipeline(
  ctx: FairnessContext,
  mode: Running,
  keys: string[],
  n: number,
  redisUrl: string,
): Promise<{ tasksPerSecond: number; cpu: Cpu; trips: Trips; redisByCommand: Map<string, ByCommand> }> {
  const base = mode.base;
  const tripsBefore = await tripCounts(ctx.pool, redisUrl);
  const postgres = () => (ctx.postgresPid === undefined ? NaN : treeCpuMs(ctx.postgresPid));
  const before = { api: cpuMs(mode.api.pid!), worker: cpuMs(mode.worker.pid!), postgres: postgres(), redis: await redisCpuMs(redisUrl) };
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: CREATORS }, async () => {
      while (next < n) {
        const i = next++;
        ids.push(await create(base, keys[i % keys.length]!, 64));
      }
    }),
  );
  await waitForCompletion(ctx.pool, ids);
  const { rows } = await ctx.pool.query<{ seconds: number }>(
    'SELECT extract(epoch FROM max(finished_at) - min(created_at))::float8 AS seconds FROM tasks WHERE public_id = ANY($1)',
    [ids],
  );
  const cpu = {
    api: (cpuMs(mode.api.pid!) - before.api) / n,
    worker: (cpuMs(mode.worker.pid!) - before.worker) / n,
    postgres: (postgres() - before.postgres) / n,
    redis: ((await redisCpuMs(redisUrl)) - before.redis) / n,
  };
  // PostgreSQL publishes a backend's counters when it goes idle, at most once a second.
  await new Promise((r) => setTimeout(r, 1_100));
  const tripsAfter = await tripCounts(ctx.pool, redisUrl);
  const trips = { transactions: (tripsAfter.transactions - tripsBefore.transactions) / n, redisCommands: (tripsAfter.redisCommands - tripsBefore.redisCommands) / n };
  const perTask = (after: Map<string, number>, before: Map<string, number>, name: string) => ((after.get(name) ?? 0) - (before.get(name) ?? 0)) / n;
  const redisByCommand = new Map(
    [...tripsAfter.byCommand.keys()].map((name) => [
      name,
      { name, usec: perTask(tripsAfter.usecByCommand, tripsBefore.usecByCommand, name), calls: perTask(tripsAfter.byCommand, tripsBefore.byCommand, name) },
    ]),
  );
  return { tasksPerSecond: n / rows[0]!.seconds, cpu, trips, redisByCommand };
}

/** A's burst, then B's one task: B's wait to start and A's median run time (ms). */
async function burstWait(ctx: FairnessContext, base: string, burst: number): Promise<{ bWaitMs: number; runMs: number; burst: number }> {
  const [a, b] = [ctx.keys[0]!, ctx.keys[1]!];
  const ofA: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: CREATORS }, async () => {
      while (next < burst) {
        next++;
        ofA.push(await create(base, a, 512));
      }
    }),
  );
  const ofB = await create(base, b, 512);
  await waitForCompletion(ctx.pool, [...ofA, ofB]);
  const { rows } = await ctx.pool.query<{ public_id: string; wait_ms: number; run_ms: number }>(
    `SELECT public_id, extract(epoch FROM started_at - created_at)::float8 * 1000 AS wait_ms,
            extract(epoch FROM finished_at - started_at)::float8 * 1000 AS run_ms
       FROM tasks WHERE public_id = ANY($1)`,
    [[...ofA, ofB]],
  );
  return {
    bWaitMs: rows.find((r) => r.public_id === ofB)!.wait_ms,
    runMs: median(rows.filter((r) => r.public_id !== ofB).map((r) => r.run_ms)),
    burst,
  };
}

export async function fairnessFigures(ctx: FairnessContext, opts: { tasks: number; rounds: number; burst: number }): Promise<FairnessFigures> {
  const perMode = <T>(f: () => T) => Object.fromEntries(MODES.map((m) => [m, f()])) as Record<Mode, T>;
  const tasksPerSecond = { one: perMode(() => [] as number[]), many: perMode(() => [] as number[]) };
  const cpu = perMode(() => [] as Cpu[]);
  const trips = perMode(() => [] as Trips[]);
  const redisByCommand = perMode(() => [] as Array<Map<string, ByCommand>>);
  const wait = {} as FairnessFigures['wait'];
  const running = {} as Record<Mode, Running>;
  try {
    for (const m of MODES) running[m] = await startMode(ctx, m);
    const run = (m: Mode, keys: string[], n: number) => pipeline(ctx, running[m], keys, n, ctx.redis[m]);
    // Warm-up: every mode's processes, JIT and pools.
    for (const m of MODES) await run(m, ctx.keys, 100);
    for (let r = 0; r < opts.rounds; r++) {
      for (const m of MODES) tasksPerSecond.one[m].push((await run(m, ctx.keys.slice(0, 1), opts.tasks)).tasksPerSecond);
      for (const m of MODES) {
        const many = await run(m, ctx.keys, opts.tasks);
        tasksPerSecond.many[m].push(many.tasksPerSecond);
        cpu[m].push(many.cpu);
        trips[m].push(many.trips);
        redisByCommand[m].push(many.redisByCommand);
      }
    }
    for (const m of MODES) wait[m] = await burstWait(ctx, running[m].base, opts.burst);
  } finally {
    await Promise.all(Object.values(running).flatMap((r) => [stop(r.api), stop(r.worker)]));
  }
  const overhead = (xs: Record<Mode, number[]>) => perModeOf((m) => median(xs.fifo.map((f, i) => (100 * (f - xs[m][i]!)) / f)));
  const cpuOf = (xs: Cpu[]): Cpu => ({
    api: median(xs.map((x) => x.api)),
    worker: median(xs.map((x) => x.worker)),
    postgres: median(xs.map((x) => x.postgres)),
    redis: median(xs.map((x) => x.redis)),
  });
  return {
    one: perModeOf((m) => median(tasksPerSecond.one[m])),
    many: perModeOf((m) => median(tasksPerSecond.many[m])),
    overheadOne: overhead(tasksPerSecond.one),
    overheadMany: overhead(tasksPerSecond.many),
    cpu: perModeOf((m) => cpuOf(cpu[m])),
    fairCostMs: median(cpu.fair.map((fair, i) => cpuSum(fair) - cpuSum(cpu.fifo[i]!))),
    trips: perModeOf((m) => ({ transactions: median(trips[m].map((t) => t.transactions)), redisCommands: median(trips[m].map((t) => t.redisCommands)) })),
    redisByCommand: perModeOf((m) =>
      [...new Set(redisByCommand[m].flatMap((r) => [...r.keys()]))]
        .map((name) => ({
          name,
          usec: median(redisByCommand[m].map((r) => r.get(name)?.usec ?? 0)),
          calls: median(redisByCommand[m].map((r) => r.get(name)?.calls ?? 0)),
        }))
        .sort((a, b) => b.usec - a.usec),
    ),
    wait,
  };
}

function perModeOf<T>(f: (m: Mode) => T): Record<Mode, T> {
  return Object.fromEntries(MODES.map((m) => [m, f(m)])) as Record<Mode, T>;
}
