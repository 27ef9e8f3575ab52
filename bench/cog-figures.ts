// Section `cog` of `npm run bench` (docs/models.md): what running a kind on a Cog model server
// costs against the built-in engine running in the worker's process, in the same run. Each mode is
// an API and one worker process (concurrency 4) on a Redis database of its own: `builtin`
// (ENGINE_IMAGE=builtin) and `cog` (ENGINE_IMAGE=cog on the Cog test server's `image` model, its
// own process with concurrency 4, which runs the same built-in image engine behind Cog's HTTP API;
// not streaming, so the worker follows each prediction by the webhooks the server posts to the API).
//   - light: 64x64 image tasks created one after another (`Prefer: wait`, the next once the previous
//     finished): per task the run time (the `processing` event the worker publishes as it starts
//     the run → the terminal event it publishes after the terminal commit) and the end-to-end time
//     (creation request sent → terminal event), timed by the bench from those Redis pub/sub events,
//     because the rows' timestamps have millisecond resolution, too coarse for a 5 ms goal (their
//     run p50 is printed beside); with Cog, the run split where the API recorded the final webhook,
//     and the model server's own predict_time. The overhead is the median over rounds of
//     p50(cog) − p50(builtin);
//   - under load: N 64x64 image tasks created by 16 concurrent clients, first creation → last
//     finish, run time p50/p95, CPU ms per task of the API, the worker and the model server.
// Rounds interleaved: builtin, cog, builtin, … for each of the two.
import type { ChildProcess } from 'node:child_process';
import { Redis } from 'ioredis';
import type pg from 'pg';
import { PREDICTION_UPDATED_CHANNEL, TASK_CHANGED_CHANNEL, TASK_FINISHED_CHANNEL, TaskStatus } from '@taskapi/domain';
import { claimRedisDb, freePort, spawnCogServer, type SpawnedCogServer } from '@taskapi/testing';
import { startApi, startBuilt, stop } from './processes';
import { cpuMs } from './runtime-figures';
import { nowMs } from './receiver';
import { median, percentile } from './stats';

export type Mode = 'builtin' | 'cog';
export const MODES: readonly Mode[] = ['builtin', 'cog'];

export interface CogContext {
  /** The services' environment (DATABASE_URL, secrets, …). */
  env: NodeJS.ProcessEnv;
  pool: pg.Pool;
  /** A paid key with a large balance. */
  key: string;
  /** A Redis database per mode, emptied before its start. */
  redis: Record<Mode, string>;
}

export interface LightFigures {
  /** Medians over rounds of each round's percentile, ms: `processing` event → terminal event. */
  runP50: number;
  runP95: number;
  /** Creation request sent → terminal event. */
  e2eP50: number;
  e2eP95: number;
  /** The client's creation request with `Prefer: wait` (sent → terminal task answered), p50 ms. */
  clientP50: number;
  /** Run p50 by the rows' timestamps (finished_at − started_at, whole milliseconds). */
  dbRunP50: number;
  /** The model server's own `metrics.predict_time` (its PUT received → prediction done), p50 ms; NaN without one. */
  predictP50: number;
  /** With a model server, the run split at the API's recording of the final webhook, p50 ms each; NaN without one. */
  toWebhookP50: number;
  afterWebhookP50: number;
  /** Model webhooks the API recorded per task (`start`, `logs`, `completed`; each a Redis write, a PUBLISH, a wake-up). */
  webhooksPerTask: number;
}

export interface LoadFigures {
  tasksPerSecond: number;
  runP50: number;
  runP95: number;
  /** CPU ms per task of the API, the worker and the model server (NaN without one). */
  cpu: { api: number; worker: number; model: number };
}

export interface CogFigures {
  light: Record<Mode, LightFigures>;
  /** Median over rounds of p50(cog) − p50(builtin), ms: of the run time and of the end-to-end time. */
  overhead: { run: number; e2e: number };
  /** Each round's run-time overhead (ms), to show the spread. */
  roundOverheads: number[];
  /** Light tasks left out of the run times (no processing event heard), of all `lightTasks` timed. */
  unheard: number;
  lightTasks: number;
  load: Record<Mode, LoadFigures>;
}

const CREATORS = 16;
const CONCURRENCY = 4;

/**
 * When the bench heard each task's events (its own clock, ms): the worker publishes
 * `<account> <task> 10` on TASK_CHANGED_CHANNEL when it starts a run and `<account> <task> <status>`
 * on TASK_FINISHED_CHANNEL after the terminal commit; the API publishes `<task> <prediction>` on
 * PREDICTION_UPDATED_CHANNEL once it recorded a model server's webhook (the last one: the final
 * prediction). Pub/sub is server-wide (not per database): events of other databases' tasks are
 * heard too and never looked up.
 */
interface TaskEvents {
  started: Map<string, number>;
  finished: Map<string, number>;
  /** The latest webhook recorded for the task, and how many were. */
  updated: Map<string, number>;
  webhooks: Map<string, number>;
  close(): void;
}

async function listenToTaskEvents(url: string): Promise<TaskEvents> {
  const redis = new Redis(url, { maxRetriesPerRequest: 1 });
  const started = new Map<string, number>();
  const finished = new Map<string, number>();
  const updated = new Map<string, number>();
  const webhooks = new Map<string, number>();
  redis.on('message', (channel: string, message: string) => {
    const at = nowMs();
    if (channel === PREDICTION_UPDATED_CHANNEL) {
      const publicId = message.split(' ')[0]!;
      updated.set(publicId, at);
      webhooks.set(publicId, (webhooks.get(publicId) ?? 0) + 1);
      return;
    }
    const [, publicId, status] = message.split(' ');
    if (!publicId || status === undefined) return; // a progress event
    if (channel === TASK_CHANGED_CHANNEL && Number(status) === TaskStatus.processing) started.set(publicId, at);
    else if (channel === TASK_FINISHED_CHANNEL) finished.set(publicId, at);
  });
  await redis.subscribe(TASK_CHANGED_CHANNEL, TASK_FINISHED_CHANNEL, PREDICTION_UPDATED_CHANNEL);
  return { started, finished, updated, webhooks, close: () => redis.disconnect() };
}

interface Running {
  base: string;
  api: ChildProcess;
  worker: ChildProcess;
  model?: SpawnedCogServer;
}

async function startMode(ctx: CogContext, mode: Mode): Promise<Running> {
  await claimRedisDb(ctx.redis[mode]);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const model = mode === 'cog' ? await spawnCogServer({ model: 'image', concurrency: CONCURRENCY }) : undefined;
  const env = {
    ...ctx.env,
    REDIS_URL: ctx.redis[mode],
    PORT: String(port),
    PUBLIC_BASE_URL: base,
    WORKER_KINDS: 'image-generation',
    WORKER_CONCURRENCY: String(CONCURRENCY),
    ENGINE_IMAGE: mode,
    ...(model ? { COG_URL_IMAGE: model.url, COG_MAX_CONCURRENCY_IMAGE: String(CONCURRENCY), COG_WEBHOOK_BASE_URL: base } : {}),
  };
  try {
    const api = await startApi(env);
    const worker = await startBuilt('worker', env).catch(async (err: unknown) => {
      await stop(api);
      throw err;
    });
    return { base, api, worker, model };
  } catch (err) {
    await model?.stop();
    throw err;
  }
}

async function stopMode(r: Running): Promise<void> {
  await Promise.all([stop(r.api), stop(r.worker), r.model?.stop()]);
}

/** Creates a 64x64 image task; with `wait`, answered once it is terminal (`Prefer: wait`). Returns its id and status as answered. */
async function create(base: string, key: string, wait: boolean): Promise<{ id: string; status: number }> {
  const res = await fetch(`${base}/api/tasks/image-generation`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json', ...(wait ? { prefer: 'wait=30' } : {}) },
    body: JSON.stringify({ prompt: 'cog bench', width: 64, height: 64 }),
  });
  if (res.status !== 201 && res.status !== 202) throw new Error(`creation answered ${res.status}: ${await res.text()}`);
  const task = (await res.json()) as { public_id: string; status: number };
  return { id: task.public_id, status: task.status };
}

async function waitForCompletion(pool: pg.Pool, ids: string[]): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM tasks WHERE public_id = ANY($1) AND status IN (20, 30, 40)', [ids]);
    if (rows[0]!.n === ids.length) return;
    if (Date.now() > deadline) throw new Error(`${ids.length - rows[0]!.n} of ${ids.length} tasks did not finish`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface TaskTimes {
  /** Ascending, ms. */
  run: number[];
  e2e: number[];
  /** The model server's `predict_time` in ms (NaN for the built-in engine). */
  predict: number[];
  seconds: number;
}

/** Run and created → finished times of finished tasks (the database's clock); fails on a task that did not complete. */
async function taskTimes(pool: pg.Pool, ids: string[]): Promise<TaskTimes> {
  const { rows } = await pool.query<{ status: number; error_message: string | null; run_ms: number; e2e_ms: number; predict_ms: number | null; created: Date; finished: Date }>(
    `SELECT status, error_message, extract(epoch FROM finished_at - started_at)::float8 * 1000 AS run_ms,
            (result->'metrics'->>'predict_time')::float8 * 1000 AS predict_ms,
            extract(epoch FROM finished_at - created_at)::float8 * 1000 AS e2e_ms, created_at AS created, finished_at AS finished
       FROM tasks WHERE public_id = ANY($1)`,
    [ids],
  );
  const failed = rows.find((r) => r.status !== TaskStatus.completed);
  if (failed) throw new Error(`a task ended with status ${failed.status}: ${failed.error_message ?? 'no message'}`);
  if (rows.length !== ids.length) throw new Error(`${ids.length - rows.length} of ${ids.length} tasks not found`);
  const first = Math.min(...rows.map((r) => r.created.getTime()));
  const last = Math.max(...rows.map((r) => r.finished.getTime()));
  return {
    run: rows.map((r) => r.run_ms).sort((a, b) => a - b),
    e2e: rows.map((r) => r.e2e_ms).sort((a, b) => a - b),
    predict: rows.map((r) => r.predict_ms ?? NaN).sort((a, b) => a - b),
    seconds: (last - first) / 1000,
  };
}

interface LightRound {
  /** Ascending, ms, by the bench's clock. */
  run: number[];
  e2e: number[];
  client: number[];
  /** With a model server: processing event → final webhook recorded, and from there → terminal event. */
  toWebhook: number[];
  afterWebhook: number[];
  /** By the rows' timestamps. */
  db: TaskTimes;
  /** Tasks without a processing event (no run time of their own). */
  unheard: number;
  /** Model webhooks recorded by the API, in all (0 for the built-in engine). */
  webhooks: number;
}

const ascending = (xs: number[]) => xs.sort((a, b) => a - b);

/** `n` tasks one after another, each created once the previous one finished. */
async function light(ctx: CogContext, events: TaskEvents, r: Running, n: number): Promise<LightRound> {
  const sent = new Map<string, number>();
  const client: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = nowMs();
    const { id, status } = await create(r.base, ctx.key, true);
    if (status < TaskStatus.completed) await waitForCompletion(ctx.pool, [id]); // the wait was not applied
    client.push(nowMs() - t0);
    sent.set(id, t0);
  }
  const db = await taskTimes(ctx.pool, [...sent.keys()]);
  // The terminal event reaches the bench about when the API's answer does: wait for the last one.
  const ids = [...sent.keys()];
  const deadline = Date.now() + 5_000;
  while (ids.some((id) => !events.finished.has(id))) {
    if (Date.now() > deadline) throw new Error(`the terminal event of ${ids.filter((id) => !events.finished.has(id)).length} of ${ids.length} tasks was not heard`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  // A processing event is not published when the API's `Prefer: wait` read found the claimed row
  // before the worker wrote its marker (the read seeds the marker, which only moves forward): such
  // a task (rare: 0 or 1 in 180 here) has no run time of its own; it is left out rather than guessed.
  const timed = ids.filter((id) => events.started.has(id));
  if (timed.length < ids.length * 0.8) throw new Error(`the processing event of only ${timed.length} of ${ids.length} tasks was heard`);
  const followed = timed.filter((id) => events.updated.has(id));
  return {
    run: ascending(timed.map((id) => events.finished.get(id)! - events.started.get(id)!)),
    toWebhook: ascending(followed.map((id) => events.updated.get(id)! - events.started.get(id)!)),
    afterWebhook: ascending(followed.map((id) => events.finished.get(id)! - events.updated.get(id)!)),
    e2e: ascending(ids.map((id) => events.finished.get(id)! - sent.get(id)!)),
    client: ascending(client),
    db,
    unheard: ids.length - timed.length,
    webhooks: ids.reduce((n, id) => n + (events.webhooks.get(id) ?? 0), 0),
  };
}

/** `n` tasks from 16 concurrent clients: tasks/s from the first creation to the last finish, run times, CPU per task. */
async function underLoad(ctx: CogContext, r: Running, n: number): Promise<LoadFigures> {
  const pids = { api: r.api.pid!, worker: r.worker.pid!, model: r.model?.pid };
  const before = { api: cpuMs(pids.api), worker: cpuMs(pids.worker), model: pids.model ? cpuMs(pids.model) : NaN };
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: CREATORS }, async () => {
      while (next < n) {
        next++;
        ids.push((await create(r.base, ctx.key, false)).id);
      }
    }),
  );
  await waitForCompletion(ctx.pool, ids);
  const times = await taskTimes(ctx.pool, ids);
  return {
    tasksPerSecond: n / times.seconds,
    runP50: percentile(times.run, 50),
    runP95: percentile(times.run, 95),
    cpu: {
      api: (cpuMs(pids.api) - before.api) / n,
      worker: (cpuMs(pids.worker) - before.worker) / n,
      model: pids.model ? (cpuMs(pids.model) - before.model) / n : NaN,
    },
  };
}

export async function cogFigures(ctx: CogContext, opts: { lightTasks: number; loadTasks: number; rounds: number }): Promise<CogFigures> {
  const perMode = <T>(f: (m: Mode) => T) => Object.fromEntries(MODES.map((m) => [m, f(m)])) as Record<Mode, T>;
  const lights = perMode(() => [] as LightRound[]);
  const loads = perMode(() => [] as LoadFigures[]);
  const running: Partial<Record<Mode, Running>> = {};
  const events = await listenToTaskEvents(ctx.redis.builtin);
  try {
    for (const m of MODES) running[m] = await startMode(ctx, m);
    const of = (m: Mode) => running[m]!;
    // Warm-up: JIT, pools, and the model server's first import of the engines.
    for (const m of MODES) {
      await light(ctx, events, of(m), 10);
      await underLoad(ctx, of(m), 50);
    }
    for (let round = 0; round < opts.rounds; round++) {
      for (const m of MODES) lights[m].push(await light(ctx, events, of(m), opts.lightTasks));
      for (const m of MODES) loads[m].push(await underLoad(ctx, of(m), opts.loadTasks));
    }
  } finally {
    await Promise.all(Object.values(running).map(stopMode));
    events.close();
  }
  const lightOf = (xs: LightRound[]): LightFigures => ({
    runP50: median(xs.map((x) => percentile(x.run, 50))),
    runP95: median(xs.map((x) => percentile(x.run, 95))),
    e2eP50: median(xs.map((x) => percentile(x.e2e, 50))),
    e2eP95: median(xs.map((x) => percentile(x.e2e, 95))),
    clientP50: median(xs.map((x) => percentile(x.client, 50))),
    dbRunP50: median(xs.map((x) => percentile(x.db.run, 50))),
    predictP50: median(xs.map((x) => percentile(x.db.predict, 50))),
    toWebhookP50: median(xs.map((x) => percentile(x.toWebhook, 50))),
    afterWebhookP50: median(xs.map((x) => percentile(x.afterWebhook, 50))),
    webhooksPerTask: xs.reduce((n, x) => n + x.webhooks, 0) / xs.reduce((n, x) => n + x.e2e.length, 0),
  });
  const difference = (which: 'run' | 'e2e') => lights.cog.map((c, i) => percentile(c[which], 50) - percentile(lights.builtin[i]![which], 50));
  const roundOverheads = difference('run');
  return {
    light: perMode((m) => lightOf(lights[m])),
    overhead: { run: median(roundOverheads), e2e: median(difference('e2e')) },
    roundOverheads,
    unheard: MODES.reduce((n, m) => n + lights[m].reduce((k, x) => k + x.unheard, 0), 0),
    lightTasks: MODES.reduce((n, m) => n + lights[m].reduce((k, x) => k + x.e2e.length, 0), 0),
    load: perMode((m) => ({
      tasksPerSecond: median(loads[m].map((x) => x.tasksPerSecond)),
      runP50: median(loads[m].map((x) => x.runP50)),
      runP95: median(loads[m].map((x) => x.runP95)),
      cpu: {
        api: median(loads[m].map((x) => x.cpu.api)),
        worker: median(loads[m].map((x) => x.cpu.worker)),
        model: median(loads[m].map((x) => x.cpu.model)),
      },
    })),
  };
}
