// `npm run chaos` (about four minutes) / `npm run chaos -- --short` (about two, run by CI): the
// whole stack on the production topology in miniature (a private PostgreSQL primary with a
// synchronous standby behind HAProxy, a private Redis primary and replica behind three Sentinels),
// a few thousand tasks with callbacks created by concurrent clients while a seeded schedule kill
// -9s the worker, the dispatcher and the API (each restarted by a supervisor after a short pause),
// restarts Redis with its data gone, restarts the PostgreSQL primary, fails Redis over (the
// primary killed, the Sentinels promote the replica) and switches PostgreSQL's primary (fenced,
// standby promoted); then, once the system has settled, an audit of what was lost, left
// unfinished, charged wrongly or announced wrongly. Exits 1 when any of that is not zero, a 500 was
// answered or full service never came back after a failover, 2 when the run itself could not be
// carried out.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '@taskapi/config';
import { createDatabase } from '@taskapi/db';
import { freePort, startPostgresPair, startRedisSentinels, testCa, testEnv, waitFor } from '@taskapi/testing';
import { createPayers } from './accounts';
import { audit } from './audit';
import { Cleanup } from './cleanup';
import { Load, planCreations, type LoadFigures } from './load';
import { startModelServer } from './model-server';
import { parseOptions, USAGE, type ChaosOptions } from './options';
import { seededRandom } from './random';
import { printReport } from './report';
import { settle } from './settle';
import { supervise, type SupervisedService } from './supervisor';
import { describeEvent, FULL_SERVICE_GOAL_MS, planTimeline, runTimeline, type ChaosEvent } from './timeline';
import { startWebhookSink } from './webhook-sink';

const ROOT = path.resolve(__dirname, '..');
const started = Date.now();
const elapsed = () => `[${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s]`;
const say = (line: string) => console.log(`${elapsed()} ${line}`);

/** The worker's WORKER_CONCURRENCY (per kind). */
const WORKER_CONCURRENCY = 4;
/**
 * Prediction slots of the model server: twice the one worker's, because predictions a killed
 * worker left run on (up to 0.8 s: its successor re-attaches to them or collects their result)
 * while the successor starts new ones, and a 409 would only delay tasks, not test anything.
 */
const MODEL_SERVER_CONCURRENCY = 2 * WORKER_CONCURRENCY;

function build(): void {
  const result = spawnSync('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
  if (result.status !== 0) throw new Error('npm run build failed');
}

/** `npm run migrate`, as operators run it before the services start. */
function migrate(databaseUrl: string): void {
  const result = spawnSync(process.execPath, [path.join(ROOT, 'dist', 'migrate.js')], { cwd: ROOT, env: { ...process.env, DATABASE_URL: databaseUrl }, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`migration failed: ${result.stdout}${result.stderr}`);
}

/**
 * The services' environment: short timings so the system converges within the run (stalled jobs
 * noticed within ~6 s, sweepers every 2 s, webhook retries within seconds), limits out of the way;
 * videos on the `cog` engine, whose model server posts its webhooks to the API started here.
 */
function servicesEnv(o: { databaseUrl: string; sentinels: string; sentinelName: string; port: number; filesDir: string; modelServerUrl: string }): NodeJS.ProcessEnv {
  return {
    ...process.env,
    ...testEnv({
      NODE_ENV: 'production',
      DATABASE_URL: o.databaseUrl,
      REDIS_URL: 'redis://127.0.0.1:6379/0',
      REDIS_SENTINELS: o.sentinels,
      REDIS_SENTINEL_NAME: o.sentinelName,
      LOG_LEVEL: 'info',
      PORT: String(o.port),
      HOST: '127.0.0.1',
      PUBLIC_BASE_URL: `http://127.0.0.1:${o.port}`,
      FILES_DIR: o.filesDir,
      SHUTDOWN_DRAIN_MS: '0',
      RATE_LIMIT_PAID_PER_MINUTE: '1000000',
      RATE_LIMIT_PAID_PER_DAY: '100000000',
      RATE_LIMIT_TRIAL_PER_MINUTE: '1000000',
      RATE_LIMIT_TRIAL_PER_DAY: '100000000',
      WORKER_KINDS: 'image-generation,video-generation',
      WORKER_CONCURRENCY: String(WORKER_CONCURRENCY),
      WORKER_LOCK_DURATION_MS: '3000',
      SWEEPER_INTERVAL_MS: '2000',
      ENGINE_VIDEO: 'cog',
      COG_URL_VIDEO: o.modelServerUrl,
      // Each worker may send the model server as many predictions as it has slots.
      COG_MAX_CONCURRENCY_VIDEO: String(WORKER_CONCURRENCY),
      COG_WEBHOOK_BASE_URL: `http://127.0.0.1:${o.port}`,
      WEBHOOK_TIMEOUT_MS: '5000',
      WEBHOOK_RETRY_DELAYS_MS: '250,500,1000,2000,4000',
    }),
    NODE_EXTRA_CA_CERTS: testCa().caFile,
  };
}

function printAnswers(figures: LoadFigures): void {
  console.log('\nAnswers the clients got (every attempt, retries included):');
  for (const [op, statuses] of Object.entries(figures.statuses)) {
    const list = [...statuses].sort(([a], [b]) => String(a).localeCompare(String(b))).map(([s, n]) => `${s} ×${n}`);
    console.log(`  ${op.padEnd(7)} ${list.join(', ') || 'none'}`);
  }
}

function header(o: ChaosOptions): void {
  console.log(
    `Task API chaos run (${o.mode}): seed ${o.seed}, ${o.tasks} tasks from ${o.clients} clients over ${o.windowMs / 1000} s, ` +
      `${os.cpus().length} CPUs, Node ${process.version}\nreplay: npm run chaos --${o.mode === 'short' ? ' --short' : ''} --seed ${o.seed}\n`,
  );
}

/** The run's directory goes at the end; unless the run passed, its logs stay for the diagnosis. */
function removeRunDir(runDir: string, keepLogs: boolean): void {
  if (keepLogs) {
    // The Redis, Sentinel, PostgreSQL and HAProxy logs sit beside their data: keep the logs only.
    for (const dir of ['redis', 'postgres'].map((d) => path.join(runDir, d)).filter((d) => fs.existsSync(d))) {
      for (const file of fs.readdirSync(dir).filter((f) => f.endsWith('.log'))) fs.copyFileSync(path.join(dir, file), path.join(runDir, 'logs', `${path.basename(dir)}-${file}`));
    }
  }
  for (const entry of fs.readdirSync(runDir)) if (!keepLogs || entry !== 'logs') fs.rmSync(path.join(runDir, entry), { recursive: true, force: true });
  if (keepLogs) console.log(`service logs kept in ${path.join(runDir, 'logs')}`);
  else fs.rmSync(runDir, { recursive: true, force: true });
}

async function run(o: ChaosOptions, cleanup: Cleanup, aborted: () => boolean): Promise<boolean> {
  const random = seededRandom(o.seed);
  header(o);
  build();

  const runDir = fs.mkdtempSync(path.join(os.tmpdir(), 'taskapi-chaos-'));
  fs.chmodSync(runDir, 0o755); // the PostgreSQL cluster below it runs as `postgres`
  const logsDir = path.join(runDir, 'logs');
  fs.mkdirSync(logsDir);
  let passed = false;
  cleanup.add('remove the run directory', () => removeRunDir(runDir, !passed));
  const postgres = await startPostgresPair({ dir: path.join(runDir, 'postgres') });
  cleanup.add('remove the private PostgreSQL primary and standby', () => postgres.stop());
  const redis = await startRedisSentinels({ dir: path.join(runDir, 'redis') });
  cleanup.add('stop the private Redis and its Sentinels', () => redis.stop());
  const databaseUrl = postgres.url('taskapi_chaos');
  migrate(databaseUrl);
  say(`private PostgreSQL ${databaseUrl} (primary and synchronous standby behind HAProxy) and Redis behind Sentinels ${redis.sentinels} ready; logs in ${logsDir}`);

  // The throwaway CA the receiver's certificate comes from (made once per process, in its own directory).
  cleanup.add('remove the test CA', () => fs.rmSync(path.dirname(testCa().caFile), { recursive: true, force: true }));
  const modelServer = await startModelServer(MODEL_SERVER_CONCURRENCY);
  cleanup.add('stop the model server', () => modelServer.close());
  // Its own random stream: the receiver's refusals depend on arrival order, the plan must not.
  const sink = await startWebhookSink(seededRandom(o.seed ^ 0x5eed));
  cleanup.add('stop the webhook receiver', () => sink.close());
  const env = servicesEnv({ databaseUrl, sentinels: redis.sentinels, sentinelName: redis.name, port: await freePort(), filesDir: path.join(runDir, 'files'), modelServerUrl: modelServer.url });
  const payers = await createPayers(loadConfig(env), databaseUrl);

  const services: SupervisedService[] = (['api', 'worker', 'webhook-dispatcher'] as const).map((name) => supervise(name, env, path.join(logsDir, `${name}.log`)));
  cleanup.add('stop the services', async () => {
    await Promise.all(services.map((s) => s.stop()));
  });
  await Promise.all(services.map((s) => s.ready()));
  const [api, worker, dispatcher] = services as [SupervisedService, SupervisedService, SupervisedService];
  say('api, worker and webhook-dispatcher started (node dist/*.js)');

  const load = new Load(`http://127.0.0.1:${env.PORT}`, planCreations(random, o.tasks, payers, sink.url, String(o.seed)));
  const plan = planTimeline(o, random);
  // After a failover: a task created, run and announced; resolves when its webhook was accepted.
  const probe = async () => {
    const publicId = await load.probe(payers[0]!, sink.url, String(o.seed));
    if (!publicId) throw new Error('the probe creation was never answered 201');
    const hook = await waitFor(() => sink.accepted().find((r) => (JSON.parse(r.body.toString()) as { public_id?: string }).public_id === publicId), {
      timeoutMs: 60_000,
      intervalMs: 20,
      what: `the webhook of probe ${publicId}`,
    });
    return hook.receivedAt;
  };
  const windowStart = Date.now() + 500;
  say(`chaos window: ${plan.length} events over ${o.windowMs / 1000} s (times below are from the window's start)`);
  const ticker = setInterval(() => say(`  ${load.done}/${o.tasks} creations answered, ${sink.accepted().length} webhooks accepted`), 10_000);
  let events: ChaosEvent[];
  try {
    [events] = await Promise.all([
      runTimeline(plan, { api, worker, dispatcher, redis, postgres, probe }, windowStart, (e) => say(describeEvent(e)), aborted),
      load.run(o.clients, windowStart, o.windowMs / o.tasks),
    ]);
  } finally {
    clearInterval(ticker);
  }
  say(`window over: ${load.done}/${o.tasks} creations answered; chaos stops, waiting for the system to settle (up to ${o.settleMs / 1000} s)`);
  await Promise.all(services.map((s) => s.ready()));

  const db = createDatabase({ url: databaseUrl, poolSize: 2 });
  try {
    await settle(db.pool, o.settleMs, (line) => say(line));
    const figures = await audit({
      db: db.pool,
      payers,
      creations: [...load.creations, ...load.probes],
      load: load.figures,
      accepted: sink.accepted(),
      refusedOnPurpose: sink.refused(),
      services,
      events,
      windowStart,
    });
    figures.push({ label: 'chaos events that could not be carried out', value: events.filter((e) => e.error).length, fails: true });
    const failovers = events.filter((e) => e.writableMs !== undefined);
    const never = failovers.filter((e) => e.fullServiceMs === undefined);
    const late = failovers.filter((e) => e.fullServiceMs !== undefined && e.fullServiceMs - e.writableMs! > FULL_SERVICE_GOAL_MS);
    figures.push(
      { label: 'failovers after which full service never came back', value: never.length, fails: true, examples: never.map(describeEvent) },
      {
        label: `failovers whose full service took longer than ${FULL_SERVICE_GOAL_MS / 1000} s`,
        value: late.length,
        fails: false,
        note: `of ${failovers.length}: ${failovers.map((e) => (e.fullServiceMs === undefined ? 'never' : `${((e.fullServiceMs - e.writableMs!) / 1000).toFixed(1)} s`)).join(', ') || 'none'}`,
      },
    );
    console.log(`\nChaos timeline (seed ${o.seed}):`);
    for (const e of events) console.log(`  ${describeEvent(e)}`);
    printAnswers(load.figures);
    console.log('\nRecovery paths and errors the services logged:');
    for (const s of services) for (const [line, n] of s.logs.notable) console.log(`  ${s.name.padEnd(19)} ${String(n).padStart(5)} × ${line.slice(0, 160)}`);
    const failed = printReport(figures);
    console.log(`\n${failed.length ? `FAILED: ${failed.map((f) => f.label).join('; ')}` : 'PASSED'} in ${((Date.now() - started) / 1000).toFixed(0)} s (seed ${o.seed})`);
    passed = failed.length === 0;
    return passed;
  } finally {
    await db.close();
  }
}

async function main(): Promise<number> {
  let options: ChaosOptions;
  try {
    options = parseOptions(process.argv.slice(2));
  } catch (err) {
    const message = (err as Error).message;
    console.error(message);
    return message === USAGE ? 0 : 2;
  }
  const cleanup = new Cleanup();
  let interrupted = false;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => {
      interrupted = true;
      console.error(`\n${signal}: stopping the services and removing the private PostgreSQL and Redis`);
      void cleanup.run().then(() => process.exit(130));
    });
  }
  try {
    return (await run(options, cleanup, () => interrupted)) ? 0 : 1;
  } catch (err) {
    console.error(`chaos run could not be carried out: ${(err as Error).stack ?? String(err)}`);
    return 2;
  } finally {
    await cleanup.run();
  }
}

void main().then((code) => process.exit(code));
