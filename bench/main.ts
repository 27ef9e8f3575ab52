// `npm run bench`: every figure of the performance table (issue 14) next to its baseline measured
// in the same run, each ratio the median of BENCH_ROUNDS (≥ 3) interleaved rounds — baseline,
// target, baseline, … — because these machines drift ±15 % between runs. About seven minutes on
// the 2-core machine; BENCH_QUICK=1 runs shorter rounds (about five minutes), same figures.
//   1. Data size: authenticated read, creation and a list page with a cursor on an API whose database
//      holds BENCH_LARGE_TASKS (1,000,000) seeded tasks, against an API whose database holds 1,000
//      tasks of the same shape (two API processes, rounds interleaved); then the query plans of
//      the hot statements on the large database.
//   2. Authenticated + rate-limited GET /api/tasks/{id} and task creation at 50 connections against
//      a bare Express hello-world route (same Node, same Express).
//   3. Creation at light load (one connection, one request at a time), next to the bare route's and
//      the floor's (bench/floor-pipeline.ts: the least this design can do per task).
//   4. Creation → signed webhook received at light load (64×64 image, one worker, one dispatcher),
//      next to the floor pipeline's.
//   5. Pipeline scaling: a burst of image tasks with 1, 2 and 4 worker processes and 1 or 2
//      dispatchers: tasks/s, time per stage, queue depths, the stage that saturates first; then
//      CPU per task of every process (API, worker, dispatcher, PostgreSQL, Redis) against the
//      floor's, in a burst and at 50 tasks/s, interleaved rounds.
//   6. Dispatcher deliveries/s against a raw undici HTTPS POST + HMAC loop (same concurrency,
//      bodies and receiver).
//   7. Fair scheduling (fairness-figures.ts): pipeline tasks/s and CPU per task from one account and
//      from 100 against first in, first out in the same run, and an account's wait behind another's
//      burst.
//   8. With BENCH_REDIS_CLUSTER=1: read and pipeline again on a local 3-master Redis Cluster.
//   9. Runtime: start-to-ready of each service built vs. through tsx, a worker's SIGTERM-to-exit
//      mid-video, and the API's resident memory (VmRSS) after all of the above.
//  10. Model server (cog-figures.ts; runs after 7): image tasks run on a Cog model server against
//      the built-in engine in the worker's process, one at a time and under load.
//  11. Tracing (tracing-figures.ts; runs after 3, before 4): the read with OTEL_SDK_DISABLED, with no
//      endpoint (as shipped), exporting every span (as JSON, and as protobuf) and exporting one trace
//      in ten, interleaved rounds; then the pipeline (creation → worker → dispatcher → webhook)
//      disabled, unset, with the SDK recording nothing, and exporting, with the spans exported per
//      task, as fast as the API takes tasks and at a steady 50/s (BENCH_TRACING_STEADY=<n>/s, 0
//      skips it); BENCH_TRACING_READ=0 skips the read.
//  12. Batch creation (batch-figures.ts; runs after 3): 100 image tasks by one batch request against
//      100 single creations (one at a time, and 16 at a time), tasks/s, interleaved rounds.
// It ends with one line per target: `target <name>: <measured> <comparison> <goal> met|MISSED`.
// BENCH_ONLY=size,express,light,batch,steering,token,webhook,pipeline,dispatcher,fairness,cog,tracing,runtime (any subset) runs some only.
// Services run as `npm run start:*` runs them: node on the built files (built first). The API
// under test has a paid key with raised limits and a large balance. Figures are printed, never
// asserted.
import { spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { Client } from 'undici';
import { loadConfig } from '@taskapi/config';
import { decryptSecret, ReadTokens, webhookSecretContext } from '@taskapi/crypto';
import { createDatabase, databaseName } from '@taskapi/db';
import { claimRedisDb, freePort, recreateDatabase, startRedisCluster, testCa, testEnv } from '@taskapi/testing';
import { createAccount } from '../services/api/src/domain/accounts';
import { createKey } from '../services/api/src/domain/api-keys';
import { createRepositories } from '../services/api/src/repositories';
import { cogFigures, type CogFigures } from './cog-figures';
import { dispatcherFigures } from './dispatcher-figures';
import { cpuSum, fairnessFigures, type Mode as FairnessMode } from './fairness-figures';
import { hotStatementPlans, middleTaskOf, seedTasks } from './large-database';
import { cpuTotal, lightWebhookLatency, pipelineRun, runMedians, serverPids, startFloor, type FloorApi, type PipelineContext, type PipelineRun, type RunMedians, type Stack } from './pipeline-figures';
import { ROOT, startApi, startProcess, stop } from './processes';
import { tracingFigures, type PipelineTracingFigures, type PipelineTracingMode } from './tracing-figures';
import { batchFigures } from './batch-figures';
import { steeringFigures } from './steering-figures';
import { nowMs, startBenchReceiver } from './receiver';
import { cpuMs, measureStartup, measureWorkerStop, rssMb, type Service } from './runtime-figures';
import { floorTarget, formatTarget, median, percentile, type Target } from './stats';

const TSX = path.join(ROOT, 'node_modules/tsx/dist/cli.mjs');
const QUICK = process.env.BENCH_QUICK === '1';
const num = (name: string, full: number, quick: number) => Number(process.env[name] ?? (QUICK ? quick : full));
const DURATION_S = num('BENCH_DURATION', 8, 4);
const SIZE_DURATION_S = num('BENCH_SIZE_DURATION', 5, 3);
const ROUNDS = Math.max(3, num('BENCH_ROUNDS', 3, 3));
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const LARGE_TASKS = Number(process.env.BENCH_LARGE_TASKS ?? 1_000_000);
/** The "empty" database: the same rows in miniature, so both answer with tasks of the same shape. */
const SMALL_TASKS = 1_000;
const LIGHT_REQUESTS = num('BENCH_LIGHT_REQUESTS', 400, 150);
const LIGHT_WEBHOOKS = num('BENCH_LIGHT_WEBHOOKS', 40, 15);
const PIPELINE_TASKS = num('BENCH_PIPELINE_TASKS', 400, 200);
/** Section 5's steady run: creations per second. */
const STEADY_TASKS_PER_SECOND = 50;
/** Section 11's steady pipeline rounds: creations per second (0: none). */
const TRACING_STEADY_PER_SECOND = Number(process.env.BENCH_TRACING_STEADY ?? STEADY_TASKS_PER_SECOND);
const DELIVERIES = num('BENCH_DELIVERIES', 2000, 1000);
const FAIRNESS_TASKS = num('BENCH_FAIRNESS_TASKS', 600, 300);
const FAIRNESS_BURST = num('BENCH_FAIRNESS_BURST', 60, 40);
const FAIRNESS_ACCOUNTS = 100;
/** Section 7's target is the difference of two noisy sums: more interleaved pairs than the other ratios. */
const FAIRNESS_ROUNDS = Math.max(ROUNDS, num('BENCH_FAIRNESS_ROUNDS', 5, 3));
const BATCH_SETS = num('BENCH_BATCH_SETS', 5, 3);
const STEERING_LINE = num('BENCH_STEERING_LINE', 100_000, 20_000);
const STEERING_CANCEL = num('BENCH_STEERING_CANCEL', 10_000, 5_000);
const COG_LIGHT_TASKS = num('BENCH_COG_LIGHT_TASKS', 30, 15);
const COG_LOAD_TASKS = num('BENCH_COG_LOAD_TASKS', 200, 100);
const DISPATCHER_CONCURRENCY = Number(process.env.BENCH_DISPATCHER_CONCURRENCY ?? 20);
const PIPELINE_CONFIGS: Array<[workers: number, dispatchers: number]> = [
  [1, 1],
  [2, 1],
  [4, 1],
  [4, 2],
];

const BENCH_DB = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/taskapi_bench';
const BENCH_REDIS = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/14';
const LARGE_DB = process.env.BENCH_LARGE_DATABASE_URL ?? withDatabaseName(BENCH_DB, `${databaseName(BENCH_DB)}_large`);
const LARGE_REDIS = process.env.BENCH_LARGE_REDIS_URL ?? withRedisDb(BENCH_REDIS, 3);

function withDatabaseName(url: string, name: string): string {
  const u = new URL(url);
  u.pathname = `/${name}`;
  return u.toString();
}

function withRedisDb(url: string, db: number): string {
  const u = new URL(url);
  u.pathname = `/${db}`;
  return u.toString();
}

interface Result {
  name: string;
  rps: number;
  /** Requests answered in the run. */
  requests: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

async function load(name: string, opts: autocannon.Options, seconds = DURATION_S): Promise<Result> {
  const r = await autocannon({ connections: CONNECTIONS, pipelining: 1, duration: seconds, ...opts });
  return { name, rps: r.requests.average, requests: r.requests.total, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors + r.timeouts };
}

/** One request at a time on one keep-alive connection: milliseconds per request, ascending. */
async function lightLoad(url: string, opts: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string }, n: number): Promise<number[]> {
  const u = new URL(url);
  const client = new Client(u.origin);
  try {
    const times: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = nowMs();
      const res = await client.request({ path: u.pathname + u.search, method: opts.method ?? 'GET', headers: opts.headers, body: opts.body });
      await res.body.arrayBuffer();
      if (res.statusCode >= 300) throw new Error(`${url} answered ${res.statusCode}`);
      times.push(nowMs() - t0);
    }
    return times.sort((a, b) => a - b);
  } finally {
    await client.close();
  }
}

function row(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
}

const pct = (x: number) => `${x.toFixed(1)} %`;

/** More accounts in the bench database, each with a paid key and a large balance (the fairness section's). */
async function extraAccounts(url: string, env: NodeJS.ProcessEnv, n: number): Promise<string[]> {
  const config = loadConfig({ ...env, DATABASE_URL: url });
  const db = createDatabase({ url, poolSize: 4 });
  try {
    const repos = createRepositories(db);
    const keys: string[] = [];
    for (let i = 0; i < n; i++) {
      const account = await createAccount(repos, config.secretsKey, { email: `bench-${i}-${Date.now()}@example.test`, password: 'bench password', credits: 1_000_000_000 });
      keys.push((await createKey({ keys: repos.keys, grants: repos.grants, secretsKey: config.secretsKey }, account.account_id, { type: 'paid' })).plaintext_key);
    }
    return keys;
  } finally {
    await db.close();
  }
}
const ms = (x: number) => x.toFixed(1);

/** A fresh, migrated database with the bench account (a large balance) and its paid key. */
async function benchAccount(url: string, env: NodeJS.ProcessEnv) {
  await recreateDatabase(url);
  const config = loadConfig({ ...env, DATABASE_URL: url });
  const db = createDatabase({ url, poolSize: 4 });
  const repos = createRepositories(db);
  const account = await createAccount(repos, config.secretsKey, { email: 'bench@example.test', password: 'bench password', credits: 1_000_000_000 });
  const { key, plaintext_key: plaintext } = await createKey({ keys: repos.keys, grants: repos.grants, secretsKey: config.secretsKey }, account.account_id, { type: 'paid' });
  const { rows } = await db.pool.query<{ webhook_secret_ciphertext: string }>('SELECT webhook_secret_ciphertext FROM accounts WHERE id = $1', [account.account_id]);
  const webhookSecret = decryptSecret(config.secretsKey, rows[0]!.webhook_secret_ciphertext, webhookSecretContext(account.account_id));
  return { db, accountId: account.account_id, keyId: key.id, key: plaintext, webhookSecret };
}

function apiEnv(databaseUrl: string, redisUrl: string, port: number): NodeJS.ProcessEnv {
  return testEnv({
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    NODE_ENV: 'production',
    // Production's level: every request writes its access-log line (to a pipe the bench drains).
    LOG_LEVEL: 'info',
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    ADMIN_USER: 'bench',
    ADMIN_PASSWORD: 'bench password',
    RATE_LIMIT_PAID_PER_MINUTE: '1000000000',
    RATE_LIMIT_PAID_PER_DAY: '1000000000',
    DATABASE_POOL_SIZE: process.env.BENCH_POOL_SIZE ?? '10',
  });
}

async function createOne(base: string, key: string): Promise<string> {
  const res = await fetch(`${base}/api/tasks/image-generation`, {
    method: 'POST',
    headers: { 'x-api-key': key, 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: 'bench' }),
  });
  return ((await res.json()) as { public_id: string }).public_id;
}

interface SizeFigures {
  op: string;
  empty: number;
  large: number;
  /** Median of the per-round ratios large / empty, in %. */
  ratio: number;
  emptyP99: number;
  largeP99: number;
}

/**
 * Read, create and list (a page of 20 after a cursor in the middle of the account's tasks) on the
 * small database and on the large one, interleaved: small, large, small, … for each operation.
 */
async function dataSizeFigures(apis: Array<{ base: string; key: string; taskId: string }>): Promise<SizeFigures[]> {
  const ops = [
    { op: 'read', opts: (a: (typeof apis)[number]) => ({ url: `${a.base}/api/tasks/${a.taskId}`, headers: { 'x-api-key': a.key } }) },
    {
      op: 'create',
      opts: (a: (typeof apis)[number]) => ({
        url: `${a.base}/api/tasks/image-generation`,
        method: 'POST' as const,
        headers: { 'x-api-key': a.key, 'content-type': 'application/json' },
        body: '{"prompt":"bench"}',
      }),
    },
    { op: 'list', opts: (a: (typeof apis)[number]) => ({ url: `${a.base}/api/tasks?limit=20&cursor=${a.taskId}`, headers: { 'x-api-key': a.key } }) },
  ];
  const figures: SizeFigures[] = [];
  for (const { op, opts } of ops) {
    for (const a of apis) await load('warm-up', opts(a), 2);
    const rounds: Array<[Result, Result]> = [];
    for (let r = 0; r < ROUNDS; r++) {
      const empty = await load(`${op} empty`, opts(apis[0]!), SIZE_DURATION_S);
      const large = await load(`${op} large`, opts(apis[1]!), SIZE_DURATION_S);
      rounds.push([empty, large]);
    }
    figures.push({
      op,
      empty: median(rounds.map(([e]) => e.rps)),
      large: median(rounds.map(([, l]) => l.rps)),
      ratio: median(rounds.map(([e, l]) => (100 * l.rps) / e.rps)),
      emptyP99: median(rounds.map(([e]) => e.p99)),
      largeP99: median(rounds.map(([, l]) => l.p99)),
    });
  }
  return figures;
}

interface VsExpress {
  baseline: number;
  read: number;
  create: number;
  readRatio: number;
  createRatio: number;
  baselineP99: number;
  readP99: number;
  createP99: number;
  createP50: number;
  failed: number;
}

/** Rounds of: baseline, read, baseline, create; each ratio against the baseline just before it. */
async function versusExpress(helloUrl: string, readUrl: string, createUrl: string, headers: Record<string, string>): Promise<VsExpress> {
  const createOpts = { url: createUrl, method: 'POST' as const, headers, body: '{"prompt":"bench"}' };
  await load('warm-up', { url: helloUrl }, 2);
  await load('warm-up', { url: readUrl, headers }, 2);
  await load('warm-up', createOpts, 2);
  const reads: Array<[Result, Result]> = [];
  const creates: Array<[Result, Result]> = [];
  for (let r = 0; r < ROUNDS; r++) {
    reads.push([await load('baseline', { url: helloUrl }), await load('read', { url: readUrl, headers })]);
    creates.push([await load('baseline', { url: helloUrl }), await load('create', createOpts)]);
  }
  const all = [...reads, ...creates];
  return {
    baseline: median(all.map(([b]) => b.rps)),
    read: median(reads.map(([, t]) => t.rps)),
    create: median(creates.map(([, t]) => t.rps)),
    readRatio: median(reads.map(([b, t]) => (100 * t.rps) / b.rps)),
    createRatio: median(creates.map(([b, t]) => (100 * t.rps) / b.rps)),
    baselineP99: median(all.map(([b]) => b.p99)),
    readP99: median(reads.map(([, t]) => t.p99)),
    createP99: median(creates.map(([, t]) => t.p99)),
    createP50: median(creates.map(([, t]) => t.p50)),
    failed: all.reduce((n, [b, t]) => n + b.non2xx + b.errors + t.non2xx + t.errors, 0),
  };
}

/** Light load: rounds of the bare route and creation, one request at a time; medians of the rounds' p50. */
async function lightFigures(
  helloUrl: string,
  createUrl: string,
  floorCreateUrl: string,
  headers: Record<string, string>,
): Promise<{ helloP50: number; createP50: number; createP99: number; floorCreateP50: number }> {
  const body = '{"prompt":"bench"}';
  const floorBody = '{"prompt":"bench","width":64,"height":64}';
  await lightLoad(helloUrl, {}, 50);
  await lightLoad(createUrl, { method: 'POST', headers, body }, 50);
  await lightLoad(floorCreateUrl, { method: 'POST', headers, body: floorBody }, 50);
  const hello: number[] = [];
  const create: number[] = [];
  const createP99: number[] = [];
  const floorCreate: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    hello.push(percentile(await lightLoad(helloUrl, {}, LIGHT_REQUESTS), 50));
    const times = await lightLoad(createUrl, { method: 'POST', headers, body }, LIGHT_REQUESTS);
    create.push(percentile(times, 50));
    createP99.push(percentile(times, 99));
    floorCreate.push(percentile(await lightLoad(floorCreateUrl, { method: 'POST', headers, body: floorBody }, LIGHT_REQUESTS), 50));
  }
  return { helloP50: median(hello), createP50: median(create), createP99: median(createP99), floorCreateP50: median(floorCreate) };
}

/**
 * The authenticated read and a pipeline run again with every service on a local 3-master Redis
 * Cluster (REDIS_CLUSTER_NODES), next to the single-node figures. Same machine, so this shows the
 * client-side cost of the cluster (slot routing, more connections), not the scaling of Redis.
 */
async function clusterFigures(env: NodeJS.ProcessEnv, ctx: PipelineContext, readPath: string, single: { read: number; readP99: number; pipeline: PipelineRun }): Promise<void> {
  const cluster = await startRedisCluster();
  const port = await freePort();
  const clusterEnv = { ...env, REDIS_CLUSTER_NODES: cluster.nodes, PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}` };
  const api = await startApi(clusterEnv);
  const base = `http://127.0.0.1:${port}`;
  try {
    const headers = { 'x-api-key': ctx.key };
    await load('warm-up', { url: `${base}${readPath}`, headers }, 2);
    const read = await load('GET /api/tasks/{id} on the cluster', { url: `${base}${readPath}`, headers });
    const p = await pipelineRun({ ...ctx, base, env: { ...ctx.env, REDIS_CLUSTER_NODES: cluster.nodes }, redisUrl: undefined, apiPid: api.pid! }, { workers: 1, dispatchers: 1, tasks: PIPELINE_TASKS });
    console.log('\n8. Redis Cluster (3 local masters) vs. single node:');
    const widths = [34, 14, 14];
    console.log(row(['figure', 'single node', 'cluster'], widths));
    console.log(row(['GET /api/tasks/{id} req/s', single.read.toFixed(0), read.rps.toFixed(0)], widths));
    console.log(row(['GET /api/tasks/{id} p99 ms', single.readP99.toFixed(1), read.p99.toFixed(1)], widths));
    console.log(row(['pipeline tasks/s (1 worker, 1 dispatcher)', single.pipeline.tasksPerSecond.toFixed(0), p.tasksPerSecond.toFixed(0)], widths));
    console.log(row(['pipeline latency p99 ms', single.pipeline.latencyP99.toFixed(0), p.latencyP99.toFixed(0)], widths));
  } finally {
    await stop(api);
    await cluster.stop();
  }
}

/** Sections run (BENCH_ONLY=size,express,light,batch,steering,token,webhook,pipeline,dispatcher,fairness,cog,tracing,runtime; default all). */
const SECTIONS = ['size', 'express', 'light', 'batch', 'steering', 'token', 'webhook', 'pipeline', 'dispatcher', 'fairness', 'cog', 'tracing', 'runtime'] as const;
const ONLY = new Set((process.env.BENCH_ONLY ?? SECTIONS.join(',')).split(',').map((x) => x.trim()));
const runs = (section: (typeof SECTIONS)[number]) => ONLY.has(section);

function printSize(size: SizeFigures[], largeCount: number): void {
  console.log(
    `\n1. Data size: ${SMALL_TASKS.toLocaleString('en')} vs. ${largeCount.toLocaleString('en')} tasks in the database (the bench account holds a tenth; ` +
      `read and list aim at the middle of its tasks), ${CONNECTIONS} connections, median of ${ROUNDS} interleaved rounds`,
  );
  const widths = [44, 11, 11, 9, 12, 12];
  console.log(row(['run', 'small r/s', 'large r/s', 'large', 'small p99', 'large p99'], widths));
  const names: Record<string, string> = {
    read: 'GET /api/tasks/{id}',
    create: 'POST /api/tasks/image-generation',
    list: 'GET /api/tasks?limit=20&cursor=… (page 2+)',
  };
  for (const s of size) console.log(row([names[s.op]!, s.empty.toFixed(0), s.large.toFixed(0), pct(s.ratio), `${ms(s.emptyP99)} ms`, `${ms(s.largeP99)} ms`], widths));
}

function printPipeline(runs: PipelineRun[]): void {
  console.log(
    `\n5. Pipeline: ${PIPELINE_TASKS} image tasks (64x64) created by 16 concurrent clients → run by W worker processes (concurrency 4 each) → announced by D dispatchers; ` +
      'stage times p50/p95 in ms (queue = created → started, run = started → finished, deliver = finished → webhook received); ' +
      'deepest waiting list of the task/webhook queue (sampled every 100 ms); CPU ms per task of the API/all workers/all dispatchers/' +
      'the PostgreSQL server (all its processes)/the Redis server, and of all five',
  );
  const widths = [6, 9, 9, 11, 11, 11, 9, 28, 7, 9];
  console.log(row(['W/D', 'tasks/s', 'e2e p50', 'queue', 'run', 'deliver', 'waiting', 'CPU ms/task', 'all', 'e2e p99'], widths));
  const stage = (x: [number, number]) => `${x[0].toFixed(0)}/${x[1].toFixed(0)}`;
  for (const r of runs) {
    const c = r.cpuPerTask;
    const cpu = [c.api, c.workers, c.dispatchers, c.postgres, c.redis].map((x) => (Number.isNaN(x) ? '-' : x.toFixed(1))).join('/');
    const all = [c.api, c.workers, c.dispatchers, c.postgres, c.redis].filter((x) => !Number.isNaN(x)).reduce((a, b) => a + b, 0);
    const cells = [`${r.workers}/${r.dispatchers}`, r.tasksPerSecond.toFixed(0), r.latencyP50.toFixed(0), stage(r.queueWait), stage(r.run), stage(r.delivery)];
    console.log(row([...cells, `${r.maxTaskQueue}/${r.maxWebhookQueue}`, cpu, all.toFixed(1), r.latencyP99.toFixed(0)], widths));
  }
  for (const r of runs) {
    const trips = r.roundTripsPerTask;
    console.log(
      `   ${r.workers} worker(s), ${r.dispatchers} dispatcher(s): saturated first: ${r.saturated}; per task ${trips.transactions.toFixed(1)} PostgreSQL transactions, ` +
        `${Number.isNaN(trips.redisCommands) ? '-' : trips.redisCommands.toFixed(0)} Redis commands.`,
    );
  }
}

/** Section 10's table (see cog-figures.ts for how each figure is taken). */
/** Section 11's pipeline figures of one load: tasks/s, spans, and CPU per task by mode. */
function printPipelineTracing(p: PipelineTracingFigures, rounds: number): void {
  console.log(
    `   Pipeline: ${p.tasks} image tasks (64x64) per round from 16 concurrent clients${p.perSecond ? ` at a steady ${p.perSecond}/s` : ' as fast as the API takes them'} → ${p.workers} worker (concurrency 4) → ${p.dispatchers} dispatcher → webhook received, ` +
      `API, worker and dispatcher all in the mode; median of ${rounds} interleaved rounds (order turning), tasks/s:`,
  );
  console.log(
    `   OTEL_SDK_DISABLED=true ${p.tasksPerSecond.disabled.toFixed(0)}; endpoint unset ${p.tasksPerSecond.unset.toFixed(0)} (cost ${p.offCost.toFixed(1)} %); ` +
      `SDK running, OTEL_TRACES_SAMPLER_ARG=0 (nothing recorded) ${p.tasksPerSecond.unrecorded.toFixed(0)}; exporting every span ${p.tasksPerSecond.exporting.toFixed(0)} (cost ${p.onCost.toFixed(1)} %; export requests from API/worker/dispatcher ` +
      `${p.exports.api}/${p.exports.worker}/${p.exports['webhook-dispatcher']}${p.exports.other > 0 ? `, ${p.exports.other} unrecognised` : ''}).`,
  );
  const spans = p.spansPerTask;
  console.log(
    `   spans exported per task (JSON bodies, warm-up tasks included), API/worker/dispatcher: ${spans.api.toFixed(2)}/${spans.worker.toFixed(2)}/${spans['webhook-dispatcher'].toFixed(2)}` +
      `${spans.other > 0 ? `, ${spans.other.toFixed(2)} unrecognised` : ''}.`,
  );
  console.log(
    `   rounds (disabled / unset / unrecorded / exporting tasks/s): ${p.rounds.map((r) => `${r.disabled.toFixed(0)} / ${r.unset.toFixed(0)} / ${r.unrecorded.toFixed(0)} / ${r.exporting.toFixed(0)}`).join(', ')}`,
  );
  const cpu = (m: PipelineTracingMode) => {
    const c = p.cpuPerTask[m];
    return `${[c.api, c.workers, c.dispatchers, c.postgres, c.redis].map((x) => x.toFixed(2)).join('/')} (all ${cpuTotal(c).toFixed(2)})`;
  };
  console.log(
    `   CPU ms per task (API/worker/dispatcher/PostgreSQL/Redis, medians): disabled ${cpu('disabled')}; unset ${cpu('unset')}; unrecorded ${cpu('unrecorded')}; exporting ${cpu('exporting')}.`,
  );
  console.log(
    `   added to all five against disabled, median of the rounds' differences: the SDK with nothing recorded ${p.unrecordedCpu.ms.toFixed(2)} ms (${p.unrecordedCpu.percent.toFixed(1)} %), ` +
      `exporting every span ${p.exportingCpu.ms.toFixed(2)} ms (${p.exportingCpu.percent.toFixed(1)} %).`,
  );
}

function printCog(c: CogFigures): void {
  console.log(
    `\n10. Image tasks (64x64) on a Cog model server (the test server's image model: the built-in engine behind Cog's HTTP API, its own process, ` +
      `concurrency 4; followed by webhooks) vs. the built-in engine in the worker's process; one API and one worker (concurrency 4) per mode; ` +
      `median of ${ROUNDS} interleaved rounds (builtin, cog, …), ms.`,
  );
  const widths = [50, 10, 10, 12];
  console.log(row(['', 'builtin', 'cog', 'cog costs'], widths));
  const fixed = (x: number, digits: number) => (Number.isFinite(x) ? x.toFixed(digits) : '-');
  const line = (name: string, b: number, g: number, digits = 1) => console.log(row([name, fixed(b, digits), fixed(g, digits), fixed(g - b, digits)], widths));
  console.log(
    `   one at a time, ${COG_LIGHT_TASKS} tasks per round (next created once the previous finished); run = the worker's processing event → its terminal event, ` +
      'e2e = creation request sent → terminal event (events heard by the bench over Redis pub/sub):',
  );
  line('run p50', c.light.builtin.runP50, c.light.cog.runP50);
  line('  start → final webhook recorded by the API, p50', c.light.builtin.toWebhookP50, c.light.cog.toWebhookP50);
  line("    the model's predict_time (PUT → done), p50", c.light.builtin.predictP50, c.light.cog.predictP50);
  line('  final webhook recorded → terminal, p50', c.light.builtin.afterWebhookP50, c.light.cog.afterWebhookP50);
  line('run p95', c.light.builtin.runP95, c.light.cog.runP95);
  line('run p50 by the rows (whole ms)', c.light.builtin.dbRunP50, c.light.cog.dbRunP50);
  line('e2e p50', c.light.builtin.e2eP50, c.light.cog.e2eP50);
  line('e2e p95', c.light.builtin.e2eP95, c.light.cog.e2eP95);
  line('creation with Prefer: wait, client p50', c.light.builtin.clientP50, c.light.cog.clientP50);
  console.log(`   under load, ${COG_LOAD_TASKS} tasks per round from 16 concurrent clients (first creation → last finish; run = started_at → finished_at):`);
  line('tasks/s', c.load.builtin.tasksPerSecond, c.load.cog.tasksPerSecond, 0);
  line('run p50', c.load.builtin.runP50, c.load.cog.runP50);
  line('run p95', c.load.builtin.runP95, c.load.cog.runP95);
  const cpu = (x: { api: number; worker: number; model: number }) => `${x.api.toFixed(2)}/${x.worker.toFixed(2)}/${Number.isFinite(x.model) ? x.model.toFixed(2) : '-'}`;
  console.log(`   Model webhooks recorded by the API per task (light): ${c.light.cog.webhooksPerTask.toFixed(2)}.`);
  console.log(`   CPU ms per task under load (API/worker/model server): builtin ${cpu(c.load.builtin.cpu)}, cog ${cpu(c.load.cog.cpu)}.`);
  console.log(
    `   Overhead (median over rounds of p50 cog − p50 builtin; the target's figure is the run's): run ${c.overhead.run.toFixed(1)} ms, e2e ${c.overhead.e2e.toFixed(1)} ms; ` +
      `run overhead per round: ${c.roundOverheads.map((x) => x.toFixed(1)).join(', ')} ms ` +
      `(${c.unheard} of ${c.lightTasks} light tasks without a processing event, left out of the run times).`,
  );
}

type FloorComparison = Record<'burst' | 'steady', Record<Stack, RunMedians>>;

/** Section 5's platform-against-floor runs: ROUNDS interleaved rounds of each stack, in a burst and at a steady rate. */
async function floorComparison(ctx: PipelineContext): Promise<FloorComparison> {
  const runsOf: Record<'burst' | 'steady', Record<Stack, PipelineRun[]>> = { burst: { platform: [], floor: [] }, steady: { platform: [], floor: [] } };
  for (let r = 0; r < ROUNDS; r++) {
    const order: Stack[] = r % 2 === 0 ? ['platform', 'floor'] : ['floor', 'platform'];
    for (const load of ['burst', 'steady'] as const) {
      for (const stack of order) {
        const perSecond = load === 'steady' ? STEADY_TASKS_PER_SECOND : undefined;
        runsOf[load][stack].push(await pipelineRun(ctx, { workers: 1, dispatchers: 1, tasks: PIPELINE_TASKS, stack, perSecond }));
      }
    }
  }
  const of = (load: 'burst' | 'steady') => ({ platform: runMedians(runsOf[load].platform), floor: runMedians(runsOf[load].floor) });
  return { burst: of('burst'), steady: of('steady') };
}

function printFloorComparison(c: FloorComparison): void {
  console.log(
    `\n   The platform against the floor of its design (bench/floor-pipeline.ts: the same five statements on the same tables, two BullMQ jobs, ` +
      `the engine and its file, one signed HTTPS POST; nothing else), 1 worker (concurrency 4) and 1 dispatcher, ${PIPELINE_TASKS} tasks per run, ` +
      `median of ${ROUNDS} interleaved rounds; CPU ms per task of the API/worker/dispatcher/PostgreSQL/Redis:`,
  );
  const widths = [34, 9, 9, 30, 7, 9, 8, 9];
  console.log(row(['', 'tasks/s', 'e2e p50', 'CPU ms/task', 'all', 'x floor', 'PG tx', 'Redis cmd'], widths));
  const fixed = (x: number, d: number) => (Number.isNaN(x) ? '-' : x.toFixed(d));
  for (const load of ['burst', 'steady'] as const) {
    for (const stack of ['platform', 'floor'] as const) {
      const m = c[load][stack];
      const cpu = [m.cpu.api, m.cpu.workers, m.cpu.dispatchers, m.cpu.postgres, m.cpu.redis].map((x) => fixed(x, 2)).join('/');
      const name = `${stack}, ${load === 'burst' ? 'burst' : `steady ${STEADY_TASKS_PER_SECOND}/s`}`;
      const times = stack === 'floor' ? '1.00' : fixed(m.total / c[load].floor.total, 2);
      console.log(row([name, fixed(m.tasksPerSecond, 0), fixed(m.latencyP50, 0), cpu, fixed(m.total, 2), times, fixed(m.transactions, 1), fixed(m.redisCommands, 0)], widths));
    }
  }
  for (const stack of ['platform', 'floor'] as const) {
    const top = c.steady[stack].topRedisCommands.map(([name, n]) => `${name} ${n.toFixed(1)}`).join(', ');
    console.log(`   Redis commands per task of the ${stack} at ${STEADY_TASKS_PER_SECOND}/s, most first: ${top}.`);
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const elapsed = () => `${((Date.now() - started) / 1000).toFixed(0)} s`;
  console.log(
    `Task API benchmark${QUICK ? ' (BENCH_QUICK)' : ''}: ${CONNECTIONS} connections, ${DURATION_S} s per run (${SIZE_DURATION_S} s for data size), ` +
      `${ROUNDS} interleaved rounds per ratio, ${os.cpus().length} CPUs, Node ${process.version}` +
      `${process.env.BENCH_ONLY ? `; only ${[...ONLY].join(', ')}` : ''}\n`,
  );
  const build = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('npm run build failed');

  // A fresh database with 1,000 tasks for the API under test and, for the data-size figures, one
  // with a million behind a second API; each with its own Redis database.
  await claimRedisDb(BENCH_REDIS);
  const port = await freePort();
  const env = apiEnv(BENCH_DB, BENCH_REDIS, port);
  const main = await benchAccount(BENCH_DB, env);
  await seedTasks(BENCH_DB, main.accountId, SMALL_TASKS, 100);
  let large: Awaited<ReturnType<typeof benchAccount>> | undefined;
  let largeApi: ChildProcess | undefined;
  let hello: Awaited<ReturnType<typeof startProcess>> | undefined;
  const api = await startApi(env);
  // The floor of the design (bench/floor-pipeline.ts) beside it, on the same database and Redis, for the bench account.
  let floor: FloorApi | undefined;
  if (runs('light') || runs('webhook') || runs('pipeline') || runs('fairness')) {
    floor = await startFloor({ ...process.env, ...env, NODE_EXTRA_CA_CERTS: testCa().caFile }, main, await freePort());
  }
  const base = `http://127.0.0.1:${port}`;
  const headers = { 'x-api-key': main.key, 'content-type': 'application/json' };
  const createUrl = `${base}/api/tasks/image-generation`;
  const targets: Target[] = [];
  try {
    await new Promise((r) => setTimeout(r, 1_000));
    const idleRss = rssMb(api.pid!);

    // 1. Data size.
    if (runs('size')) {
      await claimRedisDb(LARGE_REDIS);
      const largePort = await freePort();
      const largeEnv = apiEnv(LARGE_DB, LARGE_REDIS, largePort);
      large = await benchAccount(LARGE_DB, largeEnv);
      const seedStart = Date.now();
      await seedTasks(LARGE_DB, large.accountId, LARGE_TASKS);
      console.log(`Seeded ${LARGE_TASKS.toLocaleString('en')} tasks into ${databaseName(LARGE_DB)} in ${((Date.now() - seedStart) / 1000).toFixed(0)} s.`);
      largeApi = await startApi(largeEnv);
      const largeTask = await middleTaskOf(LARGE_DB, large.accountId);
      const size = await dataSizeFigures([
        { base, key: main.key, taskId: await middleTaskOf(BENCH_DB, main.accountId) },
        { base: `http://127.0.0.1:${largePort}`, key: large.key, taskId: largeTask },
      ]);
      await stop(largeApi);
      largeApi = undefined;
      const { rows } = await large.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM tasks');
      printSize(size, rows[0]!.n);
      console.log('\nQuery plans of the hot statements on the large database (the bench account, EXPLAIN ANALYZE):');
      for (const p of await hotStatementPlans(LARGE_DB, large.accountId, largeTask)) console.log(`\n-- ${p.name}\n${p.plan}`);
      console.log(`\n(${elapsed()})`);
      targets.push(...size.map((s): Target => ({ name: `${s.op}-1m-vs-empty`, measured: s.ratio, comparison: '>=', goal: 90, unit: '%' })));
    }

    // 2. Against bare Express. The read is of a queued task, as a client polling its new task
    // reads it (the data-size reads are of a finished task with a file, whose signed URL costs more).
    const readUrl = `${base}/api/tasks/${await createOne(base, main.key)}`;
    let vs: VsExpress | undefined;
    if (runs('express') || runs('light')) {
      hello = await startProcess([process.execPath, [TSX, path.join(ROOT, 'bench/hello-server.ts')]], process.env, /listening (\d+) (\d+)/);
    }
    const helloUrl = `http://127.0.0.1:${hello?.match[1]}/hello`;
    if (runs('express')) {
      vs = await versusExpress(helloUrl, readUrl, createUrl, headers);
      console.log(`\n2. Against bare Express, ${CONNECTIONS} connections, median of ${ROUNDS} rounds (baseline, read, baseline, create, …)`);
      const widths = [42, 10, 9, 12, 9];
      console.log(row(['run', 'req/s', 'p99 ms', 'x baseline', 'failed'], widths));
      console.log(row(['bare Express hello world', vs.baseline.toFixed(0), ms(vs.baselineP99), '100 %', ''], widths));
      console.log(row(['GET /api/tasks/{id} (auth + rate limit)', vs.read.toFixed(0), ms(vs.readP99), pct(vs.readRatio), ''], widths));
      console.log(row(['POST /api/tasks/image-generation', vs.create.toFixed(0), ms(vs.createP99), pct(vs.createRatio), String(vs.failed)], widths));
      // Where the read's time goes, one run each after the rounds (context, not a target): the same
      // answer without Express, and the API's own edge (Express, the route table, request id, metrics,
      // security headers) on its cheapest route, which has no authentication and writes no access line.
      const bare = await load('bare Node', { url: `http://127.0.0.1:${hello?.match[2]}/hello` });
      const health = await load('API /healthz', { url: `${base}/healthz` });
      console.log(`   Context (one run each): the same hello from Node's http module without Express ${bare.rps.toFixed(0)} req/s (${pct((100 * bare.rps) / vs.baseline)});`);
      console.log(`   the API's /healthz (its edge without authentication, rate limit or access line) ${health.rps.toFixed(0)} req/s (${pct((100 * health.rps) / vs.baseline)}).`);
      targets.push(
        { name: 'read-vs-express', measured: vs.readRatio, comparison: '>=', goal: 70, unit: '%' },
        { name: 'create-vs-express', measured: vs.createRatio, comparison: '>=', goal: 30, unit: '%' },
        { name: 'create-p99', measured: vs.createP99, comparison: '<', goal: 60, unit: ' ms' },
      );
    }

    // 3. Light load.
    if (runs('light')) {
      const light = await lightFigures(helloUrl, createUrl, `${floor!.base}/tasks`, headers);
      console.log(`\n3. One connection, one request at a time (${LIGHT_REQUESTS} requests per round, median of ${ROUNDS} rounds):`);
      console.log(
        `   creation p50 ${light.createP50.toFixed(2)} ms, p99 ${light.createP99.toFixed(2)} ms; bare Express p50 ${light.helloP50.toFixed(2)} ms; ` +
          `the floor's creation (bench/floor-pipeline.ts: node:http, one statement, one job) p50 ${light.floorCreateP50.toFixed(2)} ms.`,
      );
      console.log(`(${elapsed()})`);
      targets.push(floorTarget('create-light-p50', light.createP50, light.floorCreateP50, 3, 2));
    }
    // 12. Batch creation against single creations.
    if (runs('batch')) {
      const b = await batchFigures(base, main.key, ROUNDS, BATCH_SETS);
      console.log(
        `\n12. Creating 100 image tasks: one batch request vs. 100 single creations, ${BATCH_SETS} sets of 100 per round, median of ${ROUNDS} interleaved rounds ` +
          '(single one at a time, single 16 at a time, batch), tasks/s:',
      );
      console.log(
        `   single, one at a time ${b.singleSequential.toFixed(0)}; single, 16 at a time ${b.singleConcurrent.toFixed(0)}; batch of 100 ${b.batch.toFixed(0)} ` +
          `(${(b.batch / b.singleSequential).toFixed(1)}x and ${(b.batch / b.singleConcurrent).toFixed(1)}x); one batch request p50 ${b.batchP50Ms.toFixed(1)} ms.`,
      );
      console.log(`   rounds (sequential / concurrent / batch): ${b.rounds.map((r) => `${r.singleSequential.toFixed(0)} / ${r.singleConcurrent.toFixed(0)} / ${r.batch.toFixed(0)}`).join(', ')}`);
      console.log(`(${elapsed()})`);
    }
    // 14. A read with a browser read token against the same read with the key.
    if (runs('token')) {
      const taskPath = new URL(readUrl).pathname;
      const minted = await fetch(`${base}${taskPath}/read-token`, { method: 'POST', headers: { 'x-api-key': main.key } });
      const { token } = (await minted.json()) as { token: string };
      const publicUrl = `${base}${taskPath.replace('/api/tasks/', '/api/public/tasks/')}`;
      const rounds: Array<{ key: number; token: number; keyP99: number; tokenP99: number; keyCpu: number; tokenCpu: number }> = [];
      await load('warm-up', { url: publicUrl, headers: { authorization: `Bearer ${token}` } }, 2);
      // Requests per second, and the API process's CPU per request (less moved by the load
      // generator sharing the machine's cores).
      const measured = async (name: string, headers: Record<string, string>, url: string) => {
        const cpu = cpuMs(api.pid!);
        const r = await load(name, { url, headers });
        return { ...r, cpuUs: (1000 * (cpuMs(api.pid!) - cpu)) / r.requests };
      };
      const byKey = () => measured('key', { 'x-api-key': main.key }, readUrl);
      const byToken = () => measured('token', { authorization: `Bearer ${token}` }, publicUrl);
      for (let r = 0; r < ROUNDS; r++) {
        // Each goes first in every other round: neither gains from the machine's drift.
        let k: Result & { cpuUs: number };
        let t: Result & { cpuUs: number };
        if (r % 2 === 0) {
          k = await byKey();
          t = await byToken();
        } else {
          t = await byToken();
          k = await byKey();
        }
        if (k.non2xx || t.non2xx) throw new Error(`read-token section: ${k.non2xx} and ${t.non2xx} non-2xx answers`);
        rounds.push({ key: k.rps, token: t.rps, keyP99: k.p99, tokenP99: t.p99, keyCpu: k.cpuUs, tokenCpu: t.cpuUs });
      }
      const ratio = median(rounds.map((r) => (100 * r.token) / r.key));
      // Forgeries (sealed under another key): each refused 401 without a lookup.
      const forgery = new ReadTokens(randomBytes(32)).seal({ keyId: 'key_0000000000000000000000', publicId: 'task_0000000000000000000000', expiresAt: 2_000_000_000 });
      const refusal = await fetch(publicUrl, { headers: { authorization: `Bearer ${forgery}` } });
      if (refusal.status !== 401) throw new Error(`read-token section: a forged token answered ${refusal.status}, not 401`);
      const forged = await load('forged', { url: publicUrl, headers: { authorization: `Bearer ${forgery}` } });
      if (forged.non2xx !== forged.requests) throw new Error('read-token section: a forged token was not refused');
      console.log(
        `\n14. GET of a queued task, ${CONNECTIONS} connections, median of ${ROUNDS} interleaved rounds: with the API key (GET /api/tasks/{id}) ` +
          `${median(rounds.map((r) => r.key)).toFixed(0)} req/s (p99 ${ms(median(rounds.map((r) => r.keyP99)))} ms), with a read token ` +
          `(GET /api/public/tasks/{id}, Authorization: Bearer) ${median(rounds.map((r) => r.token)).toFixed(0)} req/s (p99 ${ms(median(rounds.map((r) => r.tokenP99)))} ms): ${pct(ratio)}.`,
      );
      console.log(`   rounds (key / token): ${rounds.map((r) => `${r.key.toFixed(0)} / ${r.token.toFixed(0)}`).join(', ')}`);
      console.log(
        `   API CPU per request, median: with the key ${median(rounds.map((r) => r.keyCpu)).toFixed(1)} µs, with the token ${median(rounds.map((r) => r.tokenCpu)).toFixed(1)} µs ` +
          `(rounds: ${rounds.map((r) => `${r.keyCpu.toFixed(0)} / ${r.tokenCpu.toFixed(0)}`).join(', ')}).`,
      );
      console.log(`   forged tokens refused (401, no lookup): ${forged.rps.toFixed(0)} req/s (p99 ${ms(forged.p99)} ms); 10,000 a minute is 167 a second.`);
      console.log(`(${elapsed()})`);
      targets.push({ name: 'read-token-vs-key', measured: ratio, comparison: '>=', goal: 95, unit: '%' });
    }

    // 13. Steering: the queue position on a read, bulk cancel.
    if (runs('steering')) {
      const keys = await extraAccounts(BENCH_DB, env, 3);
      const st = await steeringFigures(
        { base, databaseUrl: BENCH_DB, redisUrl: BENCH_REDIS, keys: [keys[0]!, keys[1]!, keys[2]!], rounds: ROUNDS, load: (name, url, h) => load(name, { url, headers: h }) },
        STEERING_LINE,
        STEERING_CANCEL,
      );
      console.log(
        `\n13. Steering. GET /api/tasks/{id} of a queued task, ${CONNECTIONS} connections, median of ${ROUNDS} interleaved rounds: ` +
          `alone in its line ${st.readShort.toFixed(0)} req/s (p99 ${ms(st.p99Short)} ms), at the back of a line of ${st.line.toLocaleString('en')} ` +
          `(queue.ahead ${(st.line - 1).toLocaleString('en')}) ${st.readLong.toFixed(0)} req/s (p99 ${ms(st.p99Long)} ms): ${pct(st.ratio)}.`,
      );
      console.log(`   rounds (alone / back of the line): ${st.rounds.map((r) => `${r.short.toFixed(0)} / ${r.long.toFixed(0)}`).join(', ')}`);
      console.log(`   Redis time of a read's script calls (rate limit with the marker prefetch, the position), one read at a time: alone ${st.redisUsShort.toFixed(0)} µs, back of the line ${st.redisUsLong.toFixed(0)} µs.`);
      for (const c of st.cancels) {
        console.log(
          `   Bulk cancel by filter of ${c.tasks.toLocaleString('en')} queued tasks: ${c.seconds.toFixed(2)} s (${(c.tasks / c.seconds).toFixed(0)} tasks/s); ` +
            `${c.statements} cancelling statements seen, the longest running ${ms(c.longestStatementMs)} ms (sampled every 2 ms); the longest Redis script call ${c.longestScriptMs.toFixed(2)} ms.`,
        );
      }
      console.log(`(${elapsed()})`);
      const tenThousand = st.cancels[0]!;
      targets.push(
        { name: 'read-long-line-vs-alone', measured: st.ratio, comparison: '>=', goal: 90, unit: '%' },
        { name: 'bulk-cancel-longest-statement', measured: tenThousand.longestStatementMs, comparison: '<', goal: 100, unit: ' ms' },
        { name: 'bulk-cancel-longest-script', measured: tenThousand.longestScriptMs, comparison: '<', goal: 10, unit: ' ms', decimals: 2 },
      );
    }
    if (hello) await stop(hello.child);

    // The queued tasks of the creation runs stay in the database; their jobs go, so the pipeline
    // runs measure only their own tasks (the workers' sweeper is slowed down for the same reason).
    await claimRedisDb(BENCH_REDIS);
    const receiver = await startBenchReceiver();
    const servicesEnv = { ...process.env, ...env, SWEEPER_INTERVAL_MS: '3600000', NODE_EXTRA_CA_CERTS: testCa().caFile };
    const ctx: PipelineContext = {
      base,
      key: main.key,
      env: servicesEnv,
      redisUrl: BENCH_REDIS,
      pool: main.db.pool,
      receiver,
      webhookSecret: main.webhookSecret,
      apiPid: api.pid!,
      floor,
    };

    // 11. Tracing: the read and the pipeline with the SDK off, as shipped (no endpoint) and exporting.
    if (runs('tracing')) {
      const tracingRead = process.env.BENCH_TRACING_READ !== '0';
      const t = await tracingFigures({
        env,
        readPath: new URL(readUrl).pathname,
        key: main.key,
        rounds: ROUNDS,
        read: tracingRead,
        load: (name, url, h) => load(name, { url, headers: h }),
        pipeline: { ctx, tasks: PIPELINE_TASKS, steadyPerSecond: TRACING_STEADY_PER_SECOND },
      });
      console.log('\n11. Tracing');
      if (tracingRead) {
        console.log(
          `   GET /api/tasks/{id}, ${CONNECTIONS} connections, median of ${ROUNDS} interleaved rounds, order turning ` +
            '(disabled, unset, exporting as JSON, exporting as protobuf, exporting 10 % sampled), req/s:',
        );
        console.log(
          `   OTEL_SDK_DISABLED=true ${t.rps.disabled.toFixed(0)}; endpoint unset ${t.rps.unset.toFixed(0)} (cost ${t.offCost.toFixed(1)} %); ` +
            `exporting to a local receiver ${t.rps.exporting.toFixed(0)} (cost ${t.onCost.toFixed(1)} %); the same as protobuf ${t.rps.protobuf.toFixed(0)} (cost ${t.protobufCost.toFixed(1)} %); ` +
            `OTEL_TRACES_SAMPLER_ARG=0.1 ${t.rps.sampled.toFixed(0)} (cost ${t.sampledCost.toFixed(1)} %); ${t.exports} export requests.`,
        );
        const modes = Object.keys(t.rps) as Array<keyof typeof t.rps>;
        console.log(`   rounds (${modes.join(' / ')} req/s): ${t.rounds.map((r) => modes.map((m) => r[m].toFixed(0)).join(' / ')).join(', ')}`);
        console.log(`   API CPU µs per read (medians; less moved by the other work on the host than req/s): ${modes.map((m) => `${m} ${t.cpuUsPerRead[m].toFixed(0)}`).join(', ')}.`);
      }
      const p = t.pipeline!;
      printPipelineTracing(p, ROUNDS);
      if (t.steady) printPipelineTracing(t.steady, ROUNDS);
      console.log(`(${elapsed()})`);
      if (tracingRead) {
        targets.push(
          { name: 'tracing-off-cost', measured: t.offCost, comparison: '<=', goal: 3, unit: '%', decimals: 1 },
          { name: 'tracing-on-cost', measured: t.onCost, comparison: '<=', goal: 20, unit: '%', decimals: 1 },
        );
      }
      targets.push(
        { name: 'tracing-off-cost-pipeline', measured: p.offCost, comparison: '<=', goal: 3, unit: '%', decimals: 1 },
        { name: 'tracing-on-cost-pipeline', measured: p.onCost, comparison: '<=', goal: 20, unit: '%', decimals: 1 },
        {
          name: 'tracing-cpu-per-task',
          measured: p.exportingCpu.percent,
          comparison: '<=',
          goal: 10,
          unit: ' %',
          shown: `${p.exportingCpu.ms.toFixed(2)} ms per task exporting every span`,
          of: ' of the CPU per task with OTEL_SDK_DISABLED',
        },
      );
      if (t.steady) {
        targets.push({
          name: 'tracing-cpu-per-task-steady',
          measured: t.steady.exportingCpu.percent,
          comparison: '<=',
          goal: 10,
          unit: ' %',
          shown: `${t.steady.exportingCpu.ms.toFixed(2)} ms per task exporting every span at ${t.steady.perSecond} tasks/s`,
          of: ' of the CPU per task with OTEL_SDK_DISABLED',
        });
      }
    }

    // 4. Creation → webhook at light load.
    if (runs('webhook')) {
      // The floor first and last, the platform between: neither gains from the machine's drift alone.
      const floorHooks = [await lightWebhookLatency(ctx, Math.ceil(LIGHT_WEBHOOKS / 2), 'floor')];
      const hook = await lightWebhookLatency(ctx, LIGHT_WEBHOOKS);
      floorHooks.push(await lightWebhookLatency(ctx, Math.ceil(LIGHT_WEBHOOKS / 2), 'floor'));
      const floorP50 = median(floorHooks.map((f) => f.p50));
      console.log(`\n4. Creation → signed webhook received, one 64x64 image task at a time (1 worker, 1 dispatcher; ${LIGHT_WEBHOOKS} tasks after 3 warm-up):`);
      console.log(`   p50 ${hook.p50.toFixed(1)} ms, p95 ${hook.p95.toFixed(1)} ms (the creation request itself p50 ${hook.createP50.toFixed(1)} ms); ${hook.verified} of ${hook.samples} signatures verified.`);
      console.log(`   hand-offs, median ms: ${hook.stages.map(([name, x]) => `${name} ${x.toFixed(1)}`).join('; ')}.`);
      const f = floorHooks[0]!;
      console.log(
        `   The floor (bench/floor-pipeline.ts; one run of ${Math.ceil(LIGHT_WEBHOOKS / 2)} before the platform's and one after): p50 ${floorHooks.map((x) => x.p50.toFixed(1)).join(' and ')} ms, ` +
          `p95 ${floorHooks.map((x) => x.p95.toFixed(1)).join(' and ')} ms (creation p50 ${floorHooks.map((x) => x.createP50.toFixed(1)).join(' and ')} ms); ` +
          `${floorHooks.reduce((n, x) => n + x.verified, 0)} of ${floorHooks.reduce((n, x) => n + x.samples, 0)} signatures verified; its first run's hand-offs: ${f.stages.map(([, x]) => x.toFixed(1)).join(' / ')} ms.`,
      );
      targets.push(floorTarget('webhook-light-p50', hook.p50, floorP50, 3));
    }

    // 5. Pipeline scaling.
    const pipelineRuns: PipelineRun[] = [];
    /** The platform's CPU per task in a burst, all processes (the fairness target's denominator). */
    let pipelineCpuPerTask = NaN;
    if (runs('pipeline')) {
      for (const [workers, dispatchers] of PIPELINE_CONFIGS) pipelineRuns.push(await pipelineRun(ctx, { workers, dispatchers, tasks: PIPELINE_TASKS }));
      printPipeline(pipelineRuns);
      // The platform against the floor of its design, 1 worker and 1 dispatcher, in a burst and at
      // a steady 50 tasks a second (which both keep up with): rounds interleaved, order turning.
      const vsFloor = await floorComparison(ctx);
      printFloorComparison(vsFloor);
      // The goal is at saturation (a burst); the steady rate's multiple is printed beside it.
      const { burst, steady } = vsFloor;
      pipelineCpuPerTask = burst.platform.total;
      targets.push({
        ...floorTarget('pipeline-cpu-per-task', burst.platform.total, burst.floor.total, 2),
        shown:
          `${burst.platform.total.toFixed(1)} ms per task in a burst (the floor ${burst.floor.total.toFixed(1)} ms; ` +
          `at ${STEADY_TASKS_PER_SECOND}/s ${(steady.platform.total / steady.floor.total).toFixed(2)}×)`,
      });
      console.log(`(${elapsed()})`);
    }

    // 6. Dispatcher vs. raw sender.
    if (runs('dispatcher')) {
      let ratio = NaN;
      try {
        const d = await dispatcherFigures(
          { pool: main.db.pool, accountId: main.accountId, keyId: main.keyId, webhookSecret: main.webhookSecret, env: servicesEnv, redisUrl: BENCH_REDIS, receiver, concurrency: DISPATCHER_CONCURRENCY },
          { deliveries: DELIVERIES, rounds: ROUNDS },
        );
        ratio = d.ratio;
        console.log(
          `\n6. Webhook deliveries/s to the local HTTPS receiver, ${DELIVERIES} per round, concurrency ${DISPATCHER_CONCURRENCY}, ${d.bodyBytes}-byte bodies, ` +
            `median of ${ROUNDS} rounds (raw, dispatcher, …):`,
        );
        console.log(`   raw undici POST + HMAC loop ${d.raw.toFixed(0)}/s; dispatcher (1 process) ${d.dispatcher.toFixed(0)}/s = ${pct(d.ratio)}`);
        console.log(`   CPU per webhook of the sending process: raw ${d.rawCpuMs.toFixed(2)} ms, dispatcher ${d.dispatcherCpuMs.toFixed(2)} ms.`);
        console.log(`   rounds (raw / dispatcher per s): ${d.rounds.map((r) => `${r.raw.toFixed(0)} / ${r.dispatcher.toFixed(0)}`).join(', ')}`);
        console.log(
          `   BullMQ alone, the ceiling of one job per delivery: a worker whose processor does nothing, ${DELIVERIES} jobs, concurrency ${DISPATCHER_CONCURRENCY}: ` +
            `${d.floor.jobsPerSecond.toFixed(0)} jobs/s = ${pct((100 * d.floor.jobsPerSecond) / d.raw)} of the raw loop (${d.floor.cpuMsPerJob.toFixed(2)} ms CPU per job, adding them included).`,
        );
      } catch (err) {
        console.log(`\n6. Dispatcher vs. raw sender not measured: ${(err as Error).message}`);
      }
      console.log(`(${elapsed()})`);
      targets.push({ name: 'dispatcher-vs-raw', measured: ratio, comparison: '>=', goal: 70, unit: '%' });
    }
    await receiver.close();

    // 7. Fair scheduling against first in, first out.
    if (runs('fairness')) {
      const keys = [main.key, ...(await extraAccounts(BENCH_DB, env, FAIRNESS_ACCOUNTS - 1))];
      const f = await fairnessFigures(
        {
          env: servicesEnv,
          pool: main.db.pool,
          keys,
          redis: { fair: withRedisDb(BENCH_REDIS, 12), fifo: withRedisDb(BENCH_REDIS, 13) },
          postgresPid: (await serverPids(main.db.pool, undefined)).postgres,
        },
        { tasks: FAIRNESS_TASKS, rounds: FAIRNESS_ROUNDS, burst: FAIRNESS_BURST },
      );
      console.log(
        `\n7. Fair scheduling vs. first in, first out: ${FAIRNESS_TASKS} image tasks (64x64) per run by 16 concurrent clients, one worker process ` +
          `(concurrency 4) per mode, first creation → last finish, median of ${FAIRNESS_ROUNDS} interleaved rounds; FIFO: no scheduler (bench only).`,
      );
      const widths = [30, 9, 9, 12];
      console.log(row(['tasks/s', 'FIFO', 'fair', 'fair costs'], widths));
      const line = (name: string, t: Record<FairnessMode, number>, o: Record<FairnessMode, number>) =>
        console.log(row([name, t.fifo.toFixed(0), t.fair.toFixed(0), pct(o.fair)], widths));
      line('one account', f.one, f.overheadOne);
      line(`${FAIRNESS_ACCOUNTS} accounts (round robin)`, f.many, f.overheadMany);
      const cpu = (m: FairnessMode) => [f.cpu[m].api, f.cpu[m].worker, f.cpu[m].postgres, f.cpu[m].redis].map((x) => x.toFixed(2)).join('/');
      console.log(
        `   CPU ms per task (API/worker/PostgreSQL server/Redis server, 100 accounts, medians): FIFO ${cpu('fifo')}, fair ${cpu('fair')}; ` +
          `fair costs ${f.fairCostMs.toFixed(2)} ms per task more (median of the rounds' differences); per task PostgreSQL transactions ` +
          `(the bench's polling included) FIFO ${f.trips.fifo.transactions.toFixed(1)}, fair ${f.trips.fair.transactions.toFixed(1)}; Redis commands FIFO ${f.trips.fifo.redisCommands.toFixed(0)}, fair ${f.trips.fair.redisCommands.toFixed(0)}.`,
      );
      for (const m of ['fifo', 'fair'] as const) {
        const top = f.redisByCommand[m]
          .slice(0, 10)
          .map((c) => `${c.name} ${c.usec.toFixed(1)} (${c.calls.toFixed(2)} calls)`)
          .join(', ');
        console.log(`   Redis server µs per task by command, ${m === 'fifo' ? 'FIFO' : 'fair'} (a script's include its commands'): ${top}.`);
      }
      for (const m of ['fifo', 'fair'] as const) {
        const w = f.wait[m];
        console.log(
          `   ${m === 'fifo' ? 'FIFO' : 'fair'}: B's one task, created after A's burst of ${w.burst} (512x512), started ${w.bWaitMs.toFixed(0)} ms after its creation ` +
            `= ${(w.bWaitMs / w.runMs).toFixed(1)} run times (A's median run ${w.runMs.toFixed(0)} ms).`,
        );
      }
      console.log(`(${elapsed()})`);
      targets.push(
        // Of the whole pipeline's CPU per task (section 5's platform in a burst, dispatch included);
        // without section 5, of these runs' own (fair, without dispatch: a larger share).
        {
          name: 'fairness-cpu-per-task',
          measured: (100 * f.fairCostMs) / (Number.isNaN(pipelineCpuPerTask) ? cpuSum(f.cpu.fair) : pipelineCpuPerTask),
          comparison: '<=',
          goal: 5,
          unit: ' %',
          shown: `${f.fairCostMs.toFixed(2)} ms per task`,
          of: Number.isNaN(pipelineCpuPerTask) ? " of the fair runs' CPU per task" : " of the pipeline's CPU per task",
        },
        { name: 'fairness-wait', measured: f.wait.fair.bWaitMs / f.wait.fair.runMs, comparison: '<=', goal: 2, unit: ' task run times', decimals: 2 },
      );
    }

    // 10. A Cog model server against the built-in engine.
    if (runs('cog')) {
      let overhead = NaN;
      try {
        const c = await cogFigures(
          { env: servicesEnv, pool: main.db.pool, key: main.key, redis: { builtin: withRedisDb(BENCH_REDIS, 10), cog: withRedisDb(BENCH_REDIS, 11) } },
          { lightTasks: COG_LIGHT_TASKS, loadTasks: COG_LOAD_TASKS, rounds: ROUNDS },
        );
        printCog(c);
        overhead = c.overhead.run;
      } catch (err) {
        console.log(`\n10. Cog model server vs. built-in engine not measured: ${(err as Error).message}`);
      }
      console.log(`(${elapsed()})`);
      targets.push({ name: 'cog-overhead', measured: overhead, comparison: '<=', goal: 5, unit: ' ms p50' });
    }

    if (process.env.BENCH_REDIS_CLUSTER === '1' && vs && pipelineRuns[0]) {
      await clusterFigures(env, { ...ctx, receiver: await startBenchReceiver() }, new URL(readUrl).pathname, { read: vs.read, readP99: vs.readP99, pipeline: pipelineRuns[0] });
    }

    // 9. Runtime.
    if (runs('runtime')) {
      const runtimeEnv = { ...servicesEnv, LOG_LEVEL: 'info', SHUTDOWN_DRAIN_MS: '0', PORT: String(await freePort()) };
      let workerStop: string;
      try {
        const s = await measureWorkerStop(base, main.key, runtimeEnv);
        workerStop = `${s.ms.toFixed(0)} ms (exit code ${s.code})`;
      } catch (err) {
        workerStop = `not measured (${(err as Error).message}; see the worker's log line above)`;
      }
      const startup = await measureStartup(runtimeEnv);
      console.log('\n9. Runtime (median of 3 starts each; ready = the service logged that it is listening/started):');
      console.log(row(['service', 'built ms', 'tsx ms'], [20, 10, 10]));
      for (const s of startup) console.log(row([s.service as Service, s.builtMs.toFixed(0), s.tsxMs.toFixed(0)], [20, 10, 10]));
      console.log(`   Worker SIGTERM → exit with a 10 s MP4 video encoding: ${workerStop}.`);
    }
    const loadedRss = rssMb(api.pid!);
    console.log(
      `   API resident memory (VmRSS): ${idleRss.toFixed(0)} MB idle, ${rssMb(api.pid!, 'peak').toFixed(0)} MB at its peak (VmHWM), ` +
        `${loadedRss.toFixed(0)} MB after the whole bench (a service gives grown memory back after MEMORY_RELEASE_IDLE_MS of idle event loop, 10 s).`,
    );
    const { rows: count } = await main.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM tasks');
    console.log(`   Tasks in the bench database at the end: ${count[0]!.n.toLocaleString('en')}. Total bench time ${elapsed()}.`);
    targets.push({ name: 'api-rss', measured: loadedRss, comparison: '<', goal: 150, unit: ' MB' });
  } finally {
    await floor?.stop();
    if (largeApi) await stop(largeApi);
    if (hello) await stop(hello.child);
    await stop(api);
    await main.db.close();
    await large?.db.close();
  }
  // In the order of the issue's table.
  const order = ['read-vs-express', 'create-vs-express', 'create-p99', 'create-light-p50', 'dispatcher-vs-raw', 'webhook-light-p50', 'pipeline-cpu-per-task', 'api-rss', 'fairness-cpu-per-task', 'fairness-wait', 'cog-overhead', 'tracing-cpu-per-task'];
  const rank = (t: Target) => (order.includes(t.name) ? order.indexOf(t.name) : order.length);
  console.log('');
  for (const t of [...targets].sort((a, b) => rank(a) - rank(b))) console.log(formatTarget(t));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
