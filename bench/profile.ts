// `npm run profile`: where the time of a request and of a task goes (issue 14), on the built
// services as `npm run start:*` runs them.
//   1. Counts, at one connection for 3 s with PostgreSQL statement logging on for the profile database
//      only: PostgreSQL statements and Redis commands per authenticated read, per creation and per
//      task through the whole pipeline; and the CPU each process spent per request (Node from
//      /proc, the database's backends from /proc, Redis from INFO cpu), the rest being waiting.
//   2. CPU profiles (`--cpu-prof`) of the API under 50 connections of reads, then of creations,
//      and of one worker and one dispatcher through a pipeline run (tasks one at a time, then a
//      burst), each summarised as the top functions by self time and the time per package.
// Figures are printed, never asserted. Profiles stay in PROFILE_DIR for Chrome DevTools.
// `npm run profile -- <file.cpuprofile>...` only summarises existing profiles.
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { SourceMap } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { Redis } from 'ioredis';
import pg from 'pg';
import { loadConfig } from '@taskapi/config';
import { createDatabase } from '@taskapi/db';
import { claimRedisDb, freePort, recreateDatabase, startHttpsReceiver, testCa, testEnv, type HttpsReceiver } from '@taskapi/testing';
import { createAccount } from '../services/api/src/domain/accounts';
import { createKey } from '../services/api/src/domain/api-keys';
import { createRepositories } from '../services/api/src/repositories';

const ROOT = path.resolve(__dirname, '..');
const DB_URL = process.env.PROFILE_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/taskapi_profile';
const REDIS_URL = process.env.PROFILE_REDIS_URL ?? 'redis://127.0.0.1:6379/4';
const OUT = process.env.PROFILE_DIR ?? path.join(os.tmpdir(), 'taskapi-profile');
const DURATION_S = Number(process.env.PROFILE_DURATION ?? 8);
const COUNT_SECONDS = 3;
const LIGHT_TASKS = 40;
const BURST_TASKS = 200;
const PG_LOG = process.env.PROFILE_PG_LOG ?? '/var/log/postgresql/postgresql-15-main.log';
const TOP = Number(process.env.PROFILE_TOP ?? 25);
const CLK_TCK = 100;

type Service = 'api' | 'worker' | 'webhook-dispatcher';

// ---------------------------------------------------------------------------------------------
// Summarising a .cpuprofile

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
  columnNumber: number;
}
interface ProfileNode {
  id: number;
  callFrame: CallFrame;
  children?: number[];
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const sourceMaps = new Map<string, SourceMap | null>();

function sourceMapOf(file: string): SourceMap | null {
  if (!sourceMaps.has(file)) {
    const map = `${file}.map`;
    sourceMaps.set(file, fs.existsSync(map) ? new SourceMap(JSON.parse(fs.readFileSync(map, 'utf8'))) : null);
  }
  return sourceMaps.get(file) ?? null;
}

/** Where a frame's code comes from: a package, one of our source files (through dist's source map), Node itself. */
function origin(frame: CallFrame): { group: string; where: string } {
  const url = frame.url.replace(/^file:\/\//, '');
  if (!url) return { group: frame.functionName || '(native)', where: '' };
  if (url.startsWith('node:')) return { group: url.split('/').slice(0, 2).join('/'), where: url };
  const nm = url.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const parts = url.slice(nm + 13).split('/');
    const pkg = parts[0]?.startsWith('@') ? `${parts[0]}/${parts[1]}` : (parts[0] ?? '?');
    return { group: pkg, where: `${pkg}/${parts.slice(pkg.includes('/') ? 2 : 1).join('/')}:${frame.lineNumber + 1}` };
  }
  const entry = sourceMapOf(url)?.findEntry(frame.lineNumber, frame.columnNumber);
  if (entry && 'originalSource' in entry) {
    const source = path.relative(ROOT, path.resolve(path.dirname(url), entry.originalSource));
    if (source.includes('node_modules/')) return origin({ ...frame, url: path.join(ROOT, source), lineNumber: entry.originalLine });
    return { group: `ours: ${path.dirname(source)}`, where: `${source}:${entry.originalLine + 1}` };
  }
  return { group: path.relative(ROOT, url), where: `${path.relative(ROOT, url)}:${frame.lineNumber + 1}` };
}

export function summarise(file: string, top = TOP): string {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  // Loading modules at start is not the work under study: samples beneath it are counted apart.
  const loading = new Set<number>();
  for (const n of profile.nodes) {
    for (let id: number | undefined = n.id; id !== undefined; id = parent.get(id)) {
      const name = (byId.get(id) as ProfileNode).callFrame.functionName;
      if (name === 'Module._load' || name === 'compileForInternalLoader') {
        loading.add(n.id);
        break;
      }
    }
  }
  const selfUs = new Map<number, number>();
  // timeDeltas[i] is the time before sample i; the time after it is the next delta.
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i + 1] ?? 0)));
  const fns = new Map<string, { name: string; where: string; group: string; us: number }>();
  const groups = new Map<string, number>();
  let busy = 0;
  let idle = 0;
  let startup = 0;
  for (const [id, us] of selfUs) {
    const frame = (byId.get(id) as ProfileNode).callFrame;
    if (frame.functionName === '(idle)') {
      idle += us;
      continue;
    }
    if (loading.has(id)) {
      startup += us;
      continue;
    }
    busy += us;
    const o = origin(frame);
    const key = `${frame.functionName} ${o.where}`;
    const f = fns.get(key) ?? { name: frame.functionName || '(anonymous)', where: o.where, group: o.group, us: 0 };
    f.us += us;
    fns.set(key, f);
    groups.set(o.group, (groups.get(o.group) ?? 0) + us);
  }
  const pct = (us: number) => `${((100 * us) / busy).toFixed(1).padStart(5)} %`;
  const lines = [
    `${path.basename(file)}: ${(busy / 1e6).toFixed(2)} s on CPU (besides ${(startup / 1e6).toFixed(2)} s loading modules), ${(idle / 1e6).toFixed(2)} s idle`,
    '  by package / source directory (self time):',
  ];
  for (const [g, us] of [...groups].sort((a, b) => b[1] - a[1]).slice(0, 15)) lines.push(`    ${pct(us)}  ${g}`);
  lines.push(`  top ${top} functions by self time:`);
  for (const f of [...fns.values()].sort((a, b) => b.us - a.us).slice(0, top)) lines.push(`    ${pct(f.us)}  ${f.name.slice(0, 40).padEnd(40)} ${f.where}`);
  return lines.join('\n');
}

// ---------------------------------------------------------------------------------------------
// CPU and command accounting

/** User + system CPU seconds of a process, from /proc. */
function cpuSeconds(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
  } catch {
    return 0; // a backend that ended meanwhile
  }
}

interface Counters {
  nodeCpu: Record<string, number>;
  pgCpu: number;
  redisCpu: number;
  redisCalls: Map<string, number>;
  pgLogBytes: number;
}

class Meter {
  constructor(
    private readonly admin: pg.Client,
    private readonly redis: Redis,
    private readonly dbName: string,
    private readonly processes: () => Record<string, number>,
  ) {}

  async read(): Promise<Counters> {
    const backends = await this.admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = $1', [this.dbName]);
    const info = await this.redis.info('commandstats');
    const cpu = await this.redis.info('cpu');
    const redisCalls = new Map<string, number>();
    for (const m of info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)) redisCalls.set(m[1] as string, Number(m[2]));
    const num = (name: string) => Number(new RegExp(`^${name}:([\\d.]+)`, 'm').exec(cpu)?.[1] ?? 0);
    const nodeCpu: Record<string, number> = {};
    for (const [name, pid] of Object.entries(this.processes())) nodeCpu[name] = cpuSeconds(pid);
    return {
      nodeCpu,
      pgCpu: backends.rows.reduce((s, r) => s + cpuSeconds(r.pid), 0),
      redisCpu: num('used_cpu_sys') + num('used_cpu_user'),
      redisCalls,
      pgLogBytes: fs.existsSync(PG_LOG) ? fs.statSync(PG_LOG).size : 0,
    };
  }

  /** What happened between two readings, per unit of work. */
  report(label: string, before: Counters, after: Counters, units: number, wallMs: number): string {
    const per = (x: number) => (x / units).toFixed(2);
    const calls = [...after.redisCalls]
      .map(([cmd, n]) => [cmd, n - (before.redisCalls.get(cmd) ?? 0)] as const)
      // Our own INFO readings are not the service's.
      .filter(([cmd, n]) => n > 0 && cmd !== 'info')
      .sort((a, b) => b[1] - a[1]);
    const statements = this.statementsLogged(before.pgLogBytes, after.pgLogBytes);
    const nodeMs = Object.keys(after.nodeCpu).map((p) => `${p} ${((1000 * ((after.nodeCpu[p] ?? 0) - (before.nodeCpu[p] ?? 0))) / units).toFixed(2)} ms`);
    const pgMs = (1000 * (after.pgCpu - before.pgCpu)) / units;
    const redisMs = (1000 * (after.redisCpu - before.redisCpu)) / units;
    const nodeTotal = Object.keys(after.nodeCpu).reduce((s, p) => s + (after.nodeCpu[p] ?? 0) - (before.nodeCpu[p] ?? 0), 0);
    const wall = wallMs / units;
    const waiting = wall - (1000 * nodeTotal) / units - pgMs - redisMs;
    const lines = [
      `${label}: ${units}, one at a time (PostgreSQL logging every statement; CPU of every thread, the JIT's and GC's included)`,
      `  wall ${wall.toFixed(2)} ms = Node CPU ${nodeMs.join(', ')} + PostgreSQL CPU ${pgMs.toFixed(2)} ms + Redis CPU ${redisMs.toFixed(2)} ms + waiting ${waiting.toFixed(2)} ms (loopback, scheduling, the load generator and whatever else shares the cores)`,
      `  Redis commands per unit (inside scripts too): ${calls.map(([c, n]) => `${c} ${per(n)}`).join(', ') || 'none'}`,
      fs.existsSync(PG_LOG)
        ? `  PostgreSQL statements per unit: ${[...statements].map(([s, n]) => `${per(n)} × ${s}`).join('\n      ') || 'none'}`
        : `  PostgreSQL statements: not counted (no server log at ${PG_LOG}; set PROFILE_PG_LOG)`,
    ];
    return lines.join('\n');
  }

  /** Statements the server logged for our database between two sizes of its log, by text. */
  private statementsLogged(from: number, to: number): Map<string, number> {
    const out = new Map<string, number>();
    if (to <= from) return out;
    const fd = fs.openSync(PG_LOG, 'r');
    const buf = Buffer.alloc(to - from);
    fs.readSync(fd, buf, 0, buf.length, from);
    fs.closeSync(fd);
    const marker = `@${this.dbName} LOG:  `;
    // A statement's further lines follow its log line, each starting with a tab.
    for (const line of buf.toString('utf8').replace(/\n\t/g, ' ').split('\n')) {
      const at = line.indexOf(marker);
      if (at < 0) continue;
      const m = /^(?:statement|execute [^:]*): (.*)$/.exec(line.slice(at + marker.length));
      if (!m) continue;
      const text = (m[1] as string).replace(/\s+/g, ' ').trim().slice(0, 100);
      out.set(text, (out.get(text) ?? 0) + 1);
    }
    return new Map([...out].sort((a, b) => b[1] - a[1]));
  }
}

/**
 * Redis round trips per unit of work while `work` runs: commands the services sent (MONITOR),
 * not those run inside their scripts, which INFO commandstats counts too. A separate pass, since
 * MONITOR itself costs Redis CPU.
 */
async function roundTrips(redisUrl: string, units: number, work: () => Promise<unknown>): Promise<string> {
  const client = new Redis(redisUrl);
  const monitor = await client.monitor();
  const counts = new Map<string, number>();
  const db = new URL(redisUrl).pathname.slice(1) || '0';
  monitor.on('monitor', (_time: string, args: string[], source: string, database: string) => {
    if (source === 'lua' || String(database) !== db) return;
    const cmd = (args[0] ?? '?').toLowerCase();
    if (cmd === 'info' || cmd === 'monitor') return;
    counts.set(cmd, (counts.get(cmd) ?? 0) + 1);
  });
  try {
    await work();
  } finally {
    monitor.disconnect();
    client.disconnect();
  }
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  const each = [...counts].sort((a, b) => b[1] - a[1]).map(([c, n]) => `${c} ${(n / units).toFixed(2)}`);
  return `  Redis round trips per unit: ${(total / units).toFixed(2)} (${each.join(', ')}; blocking waits and their wake-ups included)`;
}

// ---------------------------------------------------------------------------------------------
// Services

interface Started {
  child: ChildProcess;
  exited: Promise<void>;
}

function start(service: Service, env: NodeJS.ProcessEnv, profile?: string): Promise<Started> {
  const args = ['--enable-source-maps'];
  if (profile) args.push('--cpu-prof', `--cpu-prof-dir=${OUT}`, `--cpu-prof-name=${profile}.cpuprofile`);
  args.push(path.join(ROOT, 'dist', `${service}.js`));
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = { api: 'api listening', worker: 'worker started', 'webhook-dispatcher': 'webhook dispatcher started' }[service];
  return new Promise((resolve, reject) => {
    let buffered = '';
    const timer = setTimeout(() => reject(new Error(`${service} did not start`)), 60_000);
    void exited.then(() => reject(new Error(`${service} exited`)));
    child.stdout?.on('data', (chunk: Buffer) => {
      if (buffered.length < 1e6) buffered += chunk.toString();
      if (buffered.includes(`"${ready}"`)) {
        clearTimeout(timer);
        buffered = '';
        child.stdout?.removeAllListeners('data');
        child.stdout?.resume(); // access lines are read and dropped, as a log shipper would
        resolve({ child, exited });
      }
    });
  });
}

async function stop(s: Started): Promise<void> {
  s.child.kill('SIGTERM');
  await s.exited;
}

async function load(opts: autocannon.Options): Promise<autocannon.Result> {
  return autocannon({ pipelining: 1, ...opts });
}

const figures = (r: autocannon.Result) =>
  `${r.requests.average.toFixed(0)} req/s, p50 ${r.latency.p50} ms, p99 ${r.latency.p99} ms${r.non2xx + r.errors ? `, ${r.non2xx + r.errors} failed` : ''}`;

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const only = process.argv.slice(2).filter((a) => a.endsWith('.cpuprofile'));
  if (only.length) {
    for (const f of only) console.log(`${summarise(f)}\n`);
    return;
  }
  fs.mkdirSync(OUT, { recursive: true });
  console.log(`Profile run: ${os.cpus().length} CPUs, Node ${process.version}, profiles in ${OUT}\n`);
  const build = spawn('npm', ['run', '--silent', 'build'], { cwd: ROOT, stdio: 'inherit' });
  await new Promise((r) => build.once('exit', r));

  await recreateDatabase(DB_URL);
  await claimRedisDb(REDIS_URL);
  const dbName = new URL(DB_URL).pathname.slice(1);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env = {
    ...process.env,
    ...testEnv({
      DATABASE_URL: DB_URL,
      REDIS_URL,
      NODE_ENV: 'production',
      // The access log is on, as in production at the default level.
      LOG_LEVEL: process.env.PROFILE_LOG_LEVEL ?? 'info',
      PORT: String(port),
      HOST: '127.0.0.1',
      PUBLIC_BASE_URL: base,
      ADMIN_USER: 'bench',
      ADMIN_PASSWORD: 'bench password',
      RATE_LIMIT_PAID_PER_MINUTE: '1000000000',
      RATE_LIMIT_PAID_PER_DAY: '1000000000',
      SWEEPER_INTERVAL_MS: '3600000',
      SHUTDOWN_DRAIN_MS: '0',
      NODE_EXTRA_CA_CERTS: testCa().caFile,
    }),
  };
  const config = loadConfig(env);
  const db = createDatabase({ url: DB_URL, poolSize: 2 });
  const repos = createRepositories(db);
  const account = await createAccount(repos, config.secretsKey, { email: 'profile@example.test', password: 'profile password', credits: 1_000_000_000 });
  const { plaintext_key: key } = await createKey({ keys: repos.keys, grants: repos.grants, secretsKey: config.secretsKey }, account.account_id, { type: 'paid' });
  const headers = { 'x-api-key': key, 'content-type': 'application/json' };
  const createUrl = `${base}/api/tasks/image-generation`;
  const body = '{"prompt":"profile"}';

  const admin = new pg.Client({ connectionString: DB_URL.replace(/\/[^/]*$/, '/postgres') });
  await admin.connect();
  const redisAdmin = new Redis(REDIS_URL);
  const running: Record<string, Started | undefined> = {};
  const pids = () => Object.fromEntries(Object.entries(running).flatMap(([n, s]) => (s?.child.pid ? [[n, s.child.pid]] : [])));
  const meter = new Meter(admin, redisAdmin, dbName, pids);
  // Node's default keep-alive (5 s) lets the dispatcher reuse its connection; the test suite's
  // receiver advertises 1 s, which undici treats as too short to reuse (a handshake per delivery).
  const receiver: HttpsReceiver = await startHttpsReceiver(() => 204, { keepAliveTimeoutMs: 5_000 });
  const shortReceiver: HttpsReceiver = await startHttpsReceiver(() => 204);

  /** Creates tasks one at a time, each waiting for its webhook; per task: created, webhook received. */
  async function oneAtATime(n: number, tag: string, to = receiver): Promise<Array<{ id: string; sent: number; created: number; received: number }>> {
    const out = [];
    for (let i = 0; i < n; i++) {
      const sent = Date.now();
      const res = await fetch(createUrl, {
        method: 'POST',
        headers,
        body: JSON.stringify({ prompt: `${tag} ${i}`, width: 64, height: 64, callback_url: to.url(`/${tag}/${i}`) }),
      });
      const created = Date.now();
      const id = ((await res.json()) as { public_id: string }).public_id;
      const [hook] = await to.waitForCount(`/${tag}/${i}`, 1, 30_000);
      out.push({ id, sent, created, received: (hook as { receivedAt: number }).receivedAt });
    }
    return out;
  }

  try {
    // 1. Counts, with every statement of this database logged.
    await admin.query(`ALTER DATABASE "${dbName}" SET log_statement = 'all'`);
    running.api = await start('api', env);
    const first = await fetch(createUrl, { method: 'POST', headers, body });
    const readUrl = `${base}/api/tasks/${((await first.json()) as { public_id: string }).public_id}`;
    // Warmed up first (the JIT compiles on threads of its own, counted in the process's CPU).
    await load({ url: readUrl, headers, connections: 1, duration: 2 });
    let t0 = Date.now();
    let before = await meter.read();
    let result = await load({ url: readUrl, headers, connections: 1, duration: COUNT_SECONDS });
    console.log(meter.report('GET /api/tasks/{id}', before, await meter.read(), result.requests.total, Date.now() - t0));
    console.log(await roundTrips(REDIS_URL, 50, () => load({ url: readUrl, headers, connections: 1, amount: 50 })));
    await load({ url: createUrl, method: 'POST', headers, body, connections: 1, duration: 2 });
    t0 = Date.now();
    before = await meter.read();
    result = await load({ url: createUrl, method: 'POST', headers, body, connections: 1, duration: COUNT_SECONDS });
    console.log(meter.report('POST /api/tasks/image-generation', before, await meter.read(), result.requests.total, Date.now() - t0));
    console.log(await roundTrips(REDIS_URL, 50, () => load({ url: createUrl, method: 'POST', headers, body, connections: 1, amount: 50 })));
    // The creations above stay queued; only the pipeline's own tasks are run.
    await redisAdmin.flushdb();
    await redisAdmin.set('taskapi-test-suite:owner', 'the taskapi test suite empties this database on every run');
    await stop(running.api);
    running.api = await start('api', env);
    running.worker = await start('worker', { ...env, WORKER_KINDS: 'image-generation', WORKER_CONCURRENCY: '4' });
    running.dispatcher = await start('webhook-dispatcher', env);
    await oneAtATime(5, 'warm');
    t0 = Date.now();
    before = await meter.read();
    await oneAtATime(LIGHT_TASKS, 'count');
    console.log(meter.report('one task, creation → webhook', before, await meter.read(), LIGHT_TASKS, Date.now() - t0));
    console.log(await roundTrips(REDIS_URL, 10, () => oneAtATime(10, 'trips')));
    await Promise.all([stop(running.worker), stop(running.dispatcher), stop(running.api)]);
    running.worker = running.dispatcher = running.api = undefined;
    await admin.query(`ALTER DATABASE "${dbName}" RESET log_statement`);

    // 2. Profiles under load.
    running.api = await start('api', env, 'api-read');
    await load({ url: readUrl, headers, connections: 50, duration: 2 });
    console.log(`\nGET /api/tasks/{id}, 50 connections, ${DURATION_S} s (profiled): ${figures(await load({ url: readUrl, headers, connections: 50, duration: DURATION_S }))}`);
    await stop(running.api);
    running.api = await start('api', env, 'api-create');
    await load({ url: createUrl, method: 'POST', headers, body, connections: 50, duration: 2 });
    console.log(`POST /api/tasks/image-generation, 50 connections, ${DURATION_S} s (profiled): ${figures(await load({ url: createUrl, method: 'POST', headers, body, connections: 50, duration: DURATION_S }))}`);
    console.log(`POST /api/tasks/image-generation, 1 connection (profiled): ${figures(await load({ url: createUrl, method: 'POST', headers, body, connections: 1, amount: 500 }))}`);
    await stop(running.api);
    await redisAdmin.flushdb();
    await redisAdmin.set('taskapi-test-suite:owner', 'the taskapi test suite empties this database on every run');

    running.api = await start('api', env);
    running.worker = await start('worker', { ...env, WORKER_KINDS: 'image-generation', WORKER_CONCURRENCY: '4' }, 'worker');
    running.dispatcher = await start('webhook-dispatcher', env, 'dispatcher');
    await oneAtATime(5, 'warm2');
    await oneAtATime(5, 'warm3', shortReceiver);
    const median = (xs: number[]) => xs.sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
    console.log('');
    for (const [label, to] of [
      ['receiver keeping connections 5 s', receiver],
      ['receiver keeping connections 1 s, as the tests', shortReceiver],
    ] as const) {
      const handshakes = to.handshakes;
      const light = await oneAtATime(LIGHT_TASKS, `light-${to === receiver ? 'kept' : 'short'}`, to);
      const stamps = await db.pool.query<{ public_id: string; created: number; started: number; finished: number }>(
        `SELECT public_id, extract(epoch FROM created_at) * 1000 AS created, extract(epoch FROM started_at) * 1000 AS started,
                extract(epoch FROM finished_at) * 1000 AS finished FROM tasks WHERE public_id = ANY($1)`,
        [light.map((l) => l.id)],
      );
      const byId = new Map(stamps.rows.map((r) => [r.public_id, r]));
      const stage = (f: (l: (typeof light)[number], r: (typeof stamps.rows)[number]) => number) =>
        median(light.map((l) => f(l, byId.get(l.id) as (typeof stamps.rows)[number]))).toFixed(1);
      console.log(
        `One task at a time, ${label} (64×64 image, ${LIGHT_TASKS} tasks, medians): creation answered ${stage((l) => l.created - l.sent)} ms; ` +
          `created → worker started ${stage((_l, r) => Number(r.started) - Number(r.created))} ms; ` +
          `started → finished ${stage((_l, r) => Number(r.finished) - Number(r.started))} ms; ` +
          `finished → webhook received ${stage((l, r) => l.received - Number(r.finished))} ms; ` +
          `request sent → webhook received ${stage((l) => l.received - l.sent)} ms; ${to.handshakes - handshakes} TLS handshakes`,
      );
    }
    const burstStart = Date.now();
    const burstHandshakes = receiver.handshakes;
    let next = 0;
    await Promise.all(
      Array.from({ length: 16 }, async () => {
        while (next < BURST_TASKS) {
          const i = next++;
          await fetch(createUrl, { method: 'POST', headers, body: JSON.stringify({ prompt: `burst ${i}`, width: 64, height: 64, callback_url: receiver.url('/burst') }) });
        }
      }),
    );
    await receiver.waitForCount('/burst', BURST_TASKS, 120_000);
    console.log(
      `Burst: ${BURST_TASKS} tasks created (16 at a time) → webhooks received in ${((Date.now() - burstStart) / 1000).toFixed(1)} s; ` +
        `${receiver.handshakes - burstHandshakes} TLS handshakes\n`,
    );
    await Promise.all([stop(running.worker), stop(running.dispatcher), stop(running.api)]);
    running.worker = running.dispatcher = running.api = undefined;

    for (const name of ['api-read', 'api-create', 'worker', 'dispatcher']) console.log(`${summarise(path.join(OUT, `${name}.cpuprofile`))}\n`);
  } finally {
    await admin.query(`ALTER DATABASE "${dbName}" RESET log_statement`).catch(() => undefined);
    await Promise.all(Object.values(running).map((s) => (s && s.child.exitCode === null ? stop(s) : undefined)));
    await receiver.close();
    await shortReceiver.close();
    await admin.end();
    redisAdmin.disconnect();
    await db.close();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});
