// `npm run bench`: one run of about a minute on this machine, printing requests/s and latency of
//   1. a bare Express hello-world route (the baseline),
//   2. authenticated, rate-limited GET /api/tasks/{public_id},
//   3. task creation (POST /api/tasks/image-generation),
// each against the real API process (PostgreSQL + Redis), with a paid key whose limits are raised
// for the run, a large balance and no worker attached; then
//   4. the whole pipeline: image tasks created over HTTP, run by one worker process, announced by
//      one dispatcher process to a local HTTPS receiver (tasks/s and creation→webhook latency);
//   5. the runtime: start-to-ready of each service built vs. through tsx, the API's resident
//      memory idle and after all the load, and a worker's SIGTERM-to-exit time mid-video;
//   6. with BENCH_REDIS_CLUSTER=1, runs 2 and 4 again on a local 3-master Redis Cluster.
// Services run as `npm run start:*` runs them: node on the built files (built first).
// Figures are printed, never asserted.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { loadConfig } from '@taskapi/config';
import { createDatabase } from '@taskapi/db';
import { claimRedisDb, freePort, recreateDatabase, startHttpsReceiver, startRedisCluster, testCa, testEnv } from '@taskapi/testing';
import { createAccount } from '../services/api/src/domain/accounts';
import { createKey } from '../services/api/src/domain/api-keys';
import { createRepositories } from '../services/api/src/repositories';
import { measureStartup, measureWorkerStop, rssMb, serviceCommand, type Service } from './runtime-figures';

const ROOT = path.resolve(__dirname, '..');
const TSX = path.join(ROOT, 'node_modules/tsx/dist/cli.mjs');
const DURATION_S = Number(process.env.BENCH_DURATION ?? 12);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const BENCH_DB = process.env.BENCH_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/taskapi_bench';
const BENCH_REDIS = process.env.BENCH_REDIS_URL ?? 'redis://127.0.0.1:6379/14';

interface Result {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

async function waitUntilReady(url: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    const ok = await fetch(url).then((r) => r.ok, () => false);
    if (ok) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} did not become ready`);
}

function startProcess(command: [string, string[]], env: NodeJS.ProcessEnv, ready: RegExp): Promise<{ child: ChildProcess; match: RegExpExecArray }> {
  const entry = command[1].at(-1);
  return new Promise((resolve, reject) => {
    const child = spawn(command[0], command[1], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
    let buffered = '';
    const timer = setTimeout(() => reject(new Error(`${entry} did not start`)), 30_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      const m = ready.exec(buffered);
      if (m) {
        clearTimeout(timer);
        child.stdout?.removeAllListeners('data');
        child.stdout?.resume();
        resolve({ child, match: m });
      }
    });
    child.on('exit', (code) => reject(new Error(`${entry} exited with ${code}`)));
  });
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  child.removeAllListeners('exit');
  await new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    child.kill('SIGTERM');
  });
}

async function load(name: string, opts: autocannon.Options, seconds = DURATION_S): Promise<Result> {
  const r = await autocannon({ connections: CONNECTIONS, pipelining: 1, duration: seconds, ...opts });
  return { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: r.non2xx, errors: r.errors + r.timeouts };
}

const PIPELINE_TASKS = Number(process.env.BENCH_PIPELINE_TASKS ?? 400);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
}

/**
 * Creates PIPELINE_TASKS small image tasks (16 at a time) with a callback to a local HTTPS receiver,
 * with one worker process and one dispatcher process running, and times until every webhook arrived.
 */
async function pipeline(base: string, key: string, env: NodeJS.ProcessEnv): Promise<{ seconds: number; p50: number; p99: number }> {
  const receiver = await startHttpsReceiver(() => 204);
  const serviceEnv = { ...process.env, ...env, LOG_LEVEL: 'info', SWEEPER_INTERVAL_MS: '3600000', NODE_EXTRA_CA_CERTS: testCa().caFile };
  const worker = await startProcess(
    serviceCommand('worker', 'built'),
    { ...serviceEnv, WORKER_KINDS: 'image-generation', WORKER_CONCURRENCY: '4' },
    /"worker started"/,
  );
  const dispatcher = await startProcess(serviceCommand('webhook-dispatcher', 'built'), serviceEnv, /"webhook dispatcher started"/);
  try {
    const createdAt = new Map<string, number>();
    const started = Date.now();
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < PIPELINE_TASKS) {
          const i = next++;
          const res = await fetch(`${base}/api/tasks/image-generation`, {
            method: 'POST',
            headers: { 'x-api-key': key, 'content-type': 'application/json' },
            body: JSON.stringify({ prompt: `pipeline ${i}`, width: 64, height: 64, callback_url: receiver.url('/hooks') }),
          });
          createdAt.set(((await res.json()) as { public_id: string }).public_id, Date.now());
        }
      }),
    );
    await receiver.waitForCount('/hooks', PIPELINE_TASKS, 300_000);
    const latencies = receiver
      .at('/hooks')
      .map((r) => r.receivedAt - (createdAt.get((JSON.parse(r.body.toString()) as { public_id: string }).public_id) ?? NaN))
      .sort((a, b) => a - b);
    const last = Math.max(...receiver.at('/hooks').map((r) => r.receivedAt));
    return { seconds: (last - started) / 1000, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
  } finally {
    await Promise.all([stop(worker.child), stop(dispatcher.child)]);
    await receiver.close();
  }
}

type PipelineFigures = Awaited<ReturnType<typeof pipeline>>;

/**
 * The authenticated read and the pipeline again with every service on a local 3-master Redis
 * Cluster (REDIS_CLUSTER_NODES), next to the single-node figures. Same machine, so this shows the
 * client-side cost of the cluster (slot routing, more connections), not the scaling of Redis.
 */
async function clusterFigures(env: NodeJS.ProcessEnv, key: string, readPath: string, single: { read: Result; pipeline: PipelineFigures }): Promise<void> {
  const cluster = await startRedisCluster();
  const port = await freePort();
  const clusterEnv = { ...env, REDIS_CLUSTER_NODES: cluster.nodes, PORT: String(port), PUBLIC_BASE_URL: `http://127.0.0.1:${port}` };
  const [apiCommand, apiArgs] = serviceCommand('api', 'built');
  const api = spawn(apiCommand, apiArgs, { cwd: ROOT, env: { ...process.env, ...clusterEnv }, stdio: 'inherit' });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitUntilReady(`${base}/readyz`);
    const headers = { 'x-api-key': key };
    await load('warm-up', { url: `${base}${readPath}`, headers }, 2);
    const read = await load('GET /api/tasks/{id} on the cluster', { url: `${base}${readPath}`, headers });
    const p = await pipeline(base, key, clusterEnv);
    console.log('\nRedis Cluster (3 local masters) vs. single node:');
    const widths = [34, 14, 14];
    console.log(row(['figure', 'single node', 'cluster'], widths));
    console.log(row(['GET /api/tasks/{id} req/s', single.read.rps.toFixed(0), read.rps.toFixed(0)], widths));
    console.log(row(['GET /api/tasks/{id} p99 ms', single.read.p99.toFixed(1), read.p99.toFixed(1)], widths));
    console.log(row(['pipeline tasks/s', (PIPELINE_TASKS / single.pipeline.seconds).toFixed(0), (PIPELINE_TASKS / p.seconds).toFixed(0)], widths));
    console.log(row(['pipeline latency p99 ms', single.pipeline.p99.toFixed(0), p.p99.toFixed(0)], widths));
  } finally {
    await stop(api);
    await cluster.stop();
  }
}

function row(cells: string[], widths: number[]): string {
  return cells.map((c, i) => (i === 0 ? c.padEnd(widths[i] as number) : c.padStart(widths[i] as number))).join('  ');
}

async function main(): Promise<void> {
  console.log(`Task API benchmark: ${CONNECTIONS} connections, ${DURATION_S} s per run, ${os.cpus().length} CPUs, Node ${process.version}\n`);

  // Baseline.
  const build = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (build.status !== 0) throw new Error('npm run build failed');
  const hello = await startProcess([process.execPath, [TSX, path.join(ROOT, 'bench/hello-server.ts')]], process.env, /listening (\d+)/);
  const helloUrl = `http://127.0.0.1:${hello.match[1]}/hello`;
  await load('warm-up', { url: helloUrl }, 2);
  const baseline = await load('bare Express hello world', { url: helloUrl });
  await stop(hello.child);

  // A fresh database and Redis database for the API under test.
  await recreateDatabase(BENCH_DB);
  await claimRedisDb(BENCH_REDIS);
  const port = await freePort();
  const env = testEnv({
    DATABASE_URL: BENCH_DB,
    REDIS_URL: BENCH_REDIS,
    NODE_ENV: 'production',
    LOG_LEVEL: 'warn',
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_BASE_URL: `http://127.0.0.1:${port}`,
    ADMIN_USER: 'bench',
    ADMIN_PASSWORD: 'bench password',
    RATE_LIMIT_PAID_PER_MINUTE: '1000000000',
    RATE_LIMIT_PAID_PER_DAY: '1000000000',
    DATABASE_POOL_SIZE: process.env.BENCH_POOL_SIZE ?? '10',
  });
  const config = loadConfig(env);
  const db = createDatabase({ url: BENCH_DB, poolSize: 2 });
  const repos = createRepositories(db);
  const account = await createAccount(repos, config.secretsKey, { email: 'bench@example.test', password: 'bench password', credits: 1_000_000_000 });
  const { plaintext_key: key } = await createKey({ keys: repos.keys, secretsKey: config.secretsKey }, account.account_id, { type: 'paid' });

  const [apiCommand, apiArgs] = serviceCommand('api', 'built');
  const api = spawn(apiCommand, apiArgs, { cwd: ROOT, env: { ...process.env, ...env }, stdio: 'inherit' });
  const base = `http://127.0.0.1:${env.PORT}`;
  try {
    await waitUntilReady(`${base}/readyz`);
    await new Promise((r) => setTimeout(r, 1_000));
    const idleRss = rssMb(api.pid!);
    const headers = { 'x-api-key': key, 'content-type': 'application/json' };
    const created = await fetch(`${base}/api/tasks/image-generation`, { method: 'POST', headers, body: JSON.stringify({ prompt: 'bench' }) });
    const publicId = ((await created.json()) as { public_id: string }).public_id;
    const readUrl = `${base}/api/tasks/${publicId}`;

    await load('warm-up', { url: readUrl, headers }, 2);
    const read = await load('GET /api/tasks/{id} (auth + rate limit)', { url: readUrl, headers });
    await load('warm-up', { url: `${base}/api/tasks/image-generation`, method: 'POST', headers, body: '{"prompt":"bench"}' }, 2);
    const create = await load('POST /api/tasks/image-generation', {
      url: `${base}/api/tasks/image-generation`,
      method: 'POST',
      headers,
      body: '{"prompt":"bench"}',
    });
    const tasks = await db.prisma.task.count();

    const widths = [42, 10, 9, 9, 11, 8];
    console.log(row(['run', 'req/s', 'p50 ms', 'p99 ms', 'x baseline', 'non-2xx'], widths));
    for (const r of [baseline, read, create]) {
      console.log(row([r.name, r.rps.toFixed(0), r.p50.toFixed(1), r.p99.toFixed(1), `${((100 * r.rps) / baseline.rps).toFixed(1)} %`, String(r.non2xx + r.errors)], widths));
    }
    console.log(`\nTargets: authenticated read >= 50 % of baseline (${((100 * read.rps) / baseline.rps).toFixed(1)} %); creation >= 20 % (${((100 * create.rps) / baseline.rps).toFixed(1)} %) with p99 < 100 ms (${create.p99.toFixed(1)} ms).`);
    console.log(`Tasks in the database after the run: ${tasks} (each creation is charged, recorded and enqueued).`);

    // The queued tasks of the creation run stay in the database; their jobs go, so the pipeline
    // run measures only its own tasks (the workers' sweeper is slowed down for the same reason).
    await claimRedisDb(BENCH_REDIS);
    const p = await pipeline(base, key, env);
    console.log(
      `\nPipeline (1 worker process, concurrency 4; 1 dispatcher; HTTPS receiver): ${PIPELINE_TASKS} image tasks (64x64) ` +
        `created → completed → webhook received in ${p.seconds.toFixed(1)} s = ${(PIPELINE_TASKS / p.seconds).toFixed(0)} tasks/s; ` +
        `creation → webhook latency p50 ${p.p50.toFixed(0)} ms, p99 ${p.p99.toFixed(0)} ms.`,
    );
    if (process.env.BENCH_REDIS_CLUSTER === '1') await clusterFigures(env, key, `/api/tasks/${publicId}`, { read, pipeline: p });

    const loadedRss = rssMb(api.pid!);
    const servicesEnv = { ...process.env, ...env, LOG_LEVEL: 'info', SWEEPER_INTERVAL_MS: '3600000', SHUTDOWN_DRAIN_MS: '0', PORT: String(await freePort()) };
    const workerStop = await measureWorkerStop(base, key, servicesEnv);
    const startup = await measureStartup(servicesEnv);
    console.log('\nRuntime (median of 3 starts each; ready = the service logged that it is listening/started):');
    console.log(row(['service', 'built ms', 'tsx ms'], [20, 10, 10]));
    for (const s of startup) console.log(row([s.service as Service, s.builtMs.toFixed(0), s.tsxMs.toFixed(0)], [20, 10, 10]));
    console.log(`API resident memory: ${idleRss.toFixed(0)} MB idle, ${loadedRss.toFixed(0)} MB after the load above (goal < 150 MB).`);
    console.log(`Worker SIGTERM → exit with a 10 s MP4 video encoding: ${workerStop.ms.toFixed(0)} ms (exit code ${workerStop.code}).`);
  } finally {
    await stop(api);
    await db.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
