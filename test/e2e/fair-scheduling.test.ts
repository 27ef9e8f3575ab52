// Fair scheduling across accounts (docs/fair-scheduling.md), through the public edge: tasks
// created over HTTP, run by real workers on real Redis (a server of this file's own, and a local
// Redis Cluster) and PostgreSQL (a database of this file's own, so its sweepers see only its
// tasks), on a Cog model server that records who runs when. Each test's accounts are its own.
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { TASK_QUEUES } from '@taskapi/queue';
import {
  recreateDatabase,
  startPrivateRedis,
  startRedisCluster,
  testDatabaseUrl,
  testEnv,
  waitFor,
  type LocalRedisCluster,
  type PrivateRedis,
} from '@taskapi/testing';
import { createKey, seedAccount, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from '../../services/api/test/support/harness';
import { startChild, startWorker, type ChildService, type Running } from './support/system';
import { startModelStub, type ModelRequest, type ModelStub, type StubAnswer } from './support/model-stub';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
const DATABASE_URL = testDatabaseUrl('fair_scheduling');

interface Customer {
  account: TestAccount;
  key: CreatedKey;
  /** Public ids of its tasks, in creation order. */
  tasks: string[];
}

/** An API on `redis` and this file's database, image and video running on the model stub. */
class FairSystem {
  api!: TestApi;
  model!: ModelStub;
  env!: Record<string, string>;
  private readonly running: Running[] = [];

  static async start(redis: Record<string, string>, policy: (publicId: string, n: number) => StubAnswer, overrides: Record<string, string> = {}): Promise<FairSystem> {
    const system = new FairSystem();
    system.model = await startModelStub(policy);
    system.env = {
      DATABASE_URL,
      ...redis,
      SWEEPER_INTERVAL_MS: '3600000',
      ENGINE_IMAGE: 'cog',
      ENGINE_VIDEO: 'cog',
      COG_URL_IMAGE: system.model.url,
      COG_URL_VIDEO: system.model.url,
      // The stub runs 256 predictions at once: every worker slot may send one.
      COG_MAX_CONCURRENCY_IMAGE: '256',
      COG_MAX_CONCURRENCY_VIDEO: '256',
      WORKER_KINDS: 'image-generation,video-generation',
      ...overrides,
    };
    system.api = await startApi(system.env);
    // The model server posts its webhooks to this API.
    system.env.COG_WEBHOOK_BASE_URL = system.api.url;
    return system;
  }

  async customer(): Promise<Customer> {
    const account = await seedAccount(this.api, { credits: 100_000 });
    return { account, key: await createKey(this.api, account, { type: 'paid' }), tasks: [] };
  }

  /** Creates `n` tasks of the customer's, one request after the other. */
  async create(c: Customer, n: number, kind: 'image-generation' | 'video-generation' = 'image-generation'): Promise<string[]> {
    const body = kind === 'image-generation' ? { prompt: 'fair', width: 64, height: 64 } : { prompt: 'fair', duration_seconds: 1 };
    const made: string[] = [];
    for (let i = 0; i < n; i++) {
      // A 503 (a backend not reachable yet: a Redis Cluster that has just formed) is retried, as
      // its Retry-After tells a client to.
      const res = await waitFor(
        async () => {
          const answer = await this.api.req('POST', `/api/tasks/${kind}`, { headers: withKey(c.key), body });
          return answer.status === 503 ? undefined : answer;
        },
        { timeoutMs: 10_000, intervalMs: 100, what: 'a creation not answered 503' },
      );
      expect(res.status).toBe(201);
      made.push(res.body.public_id as string);
    }
    c.tasks.push(...made);
    return made;
  }

  async worker(env: Record<string, string>): Promise<Running> {
    const w = await startWorker({ ...this.env, ...env });
    this.running.push(w);
    return w;
  }

  /** A worker as its own process (`node dist/worker.js`, the image's command). */
  async workerProcess(env: Record<string, string>): Promise<ChildService> {
    const w = await startChild('worker', { ...this.env, ...env }, 'worker started', 'node');
    this.running.push(w);
    return w;
  }

  async waitForStatus(ids: string[], status: number, timeoutMs = 60_000): Promise<void> {
    await waitFor(
      async () => {
        const { rows } = await this.api.deps.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM tasks WHERE public_id = ANY($1) AND status = $2', [ids, status]);
        return rows[0]!.n === ids.length;
      },
      { timeoutMs, intervalMs: 100, what: `${ids.length} tasks in status ${status}` },
    );
  }

  /** Answers every held request, and those that come next, until these tasks have all completed. */
  async drain(ids: string[]): Promise<void> {
    await waitFor(
      async () => {
        this.model.releaseAll();
        const { rows } = await this.api.deps.db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM tasks WHERE public_id = ANY($1) AND status = 20', [ids]);
        return rows[0]!.n === ids.length;
      },
      { timeoutMs: 30_000, intervalMs: 50, what: `${ids.length} tasks to complete` },
    );
  }

  async stop(): Promise<void> {
    this.model?.releaseAll();
    await Promise.all(this.running.splice(0).map((r) => r.stop()));
    await this.api?.close();
    await this.model?.close();
  }
}

/** `npm run admin -- ...` with the services' environment. */
async function admin(env: Record<string, string>, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run('npm', ['run', '--silent', 'admin', '--', ...args], { env: { PATH: process.env.PATH, ...testEnv(env) }, cwd: ROOT });
    return { code: 0, stdout, stderr };
  } catch (err) {
    return err as { code: number; stdout: string; stderr: string };
  }
}

/** The first request of each task, in the order the model server saw them: who started when. */
const starts = (model: ModelStub) => model.requests.filter((r) => r.n === 1);
const ownerOf = (customers: Customer[]) => (r: ModelRequest) => customers.findIndex((c) => c.tasks.includes(r.publicId));

/** The most requests of these tasks the model served at one moment ([arrival, answer) intervals). */
function maxOverlap(requests: ModelRequest[]): number {
  const edges = requests.flatMap((r) => [[r.at, 1] as const, [r.endedAt ?? Number.MAX_SAFE_INTEGER, -1] as const]);
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let now = 0;
  let most = 0;
  for (const [, d] of edges) most = Math.max(most, (now += d));
  return most;
}

/** Sample value of a metric with these labels, from the API's /metrics. */
async function metric(api: TestApi, name: string, kind: string): Promise<number | undefined> {
  const text = await (await fetch(`${api.url}/metrics`)).text();
  const m = new RegExp(`^${name}\\{kind="${kind}"\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : undefined;
}

let redisServer: PrivateRedis;
let cluster: LocalRedisCluster | undefined;

beforeAll(async () => {
  await recreateDatabase(DATABASE_URL);
  redisServer = await startPrivateRedis();
}, 60_000);

afterAll(async () => {
  await cluster?.stop();
  await redisServer?.stop();
});

async function flushRedis(): Promise<void> {
  const redis = new Redis(redisServer.url, { maxRetriesPerRequest: 1 });
  await redis.flushdb();
  redis.disconnect();
}

describe.each([
  ['one Redis server', async () => ({ REDIS_URL: redisServer.url })],
  [
    'a Redis Cluster',
    async () => {
      cluster ??= await startRedisCluster();
      return { REDIS_CLUSTER_NODES: cluster.nodes };
    },
  ],
])('a burst does not hold a kind (%s)', (_name, redisEnv) => {
  let system: FairSystem;
  afterEach(async () => {
    await system?.stop();
    await flushRedis();
  });

  it("B's first task starts after at most WORKER_CONCURRENCY more of A's 60", async () => {
    system = await FairSystem.start(await redisEnv(), () => ({ delayMs: 40 }));
    const [a, b] = [await system.customer(), await system.customer()];
    await system.worker({ WORKER_CONCURRENCY: '2' });
    await system.create(a, 60);
    await system.create(b, 1);
    // Counted once B's creation is answered (its task is in the scheduler by then): A's tasks that
    // start while the request is on its way are not the scheduler's doing (one every 20 ms here, and
    // a creation takes longer than that on a loaded machine).
    const startedBeforeB = starts(system.model).length;
    await system.waitForStatus([...a.tasks, ...b.tasks], 20);

    const order = starts(system.model).map(ownerOf([a, b]));
    const bFirst = order.indexOf(1);
    // Of A's tasks, those that started after B's was in line and before it: at most the ones
    // already released to the two slots.
    expect(bFirst - startedBeforeB).toBeLessThanOrEqual(2);
    // B did not wait behind A's backlog: most of A's tasks started after it.
    expect(order.slice(bFirst + 1).filter((o) => o === 0).length).toBeGreaterThan(30);
  }, 90_000);
});

describe('fair share, caps and recovery (one Redis server)', () => {
  let system: FairSystem;
  afterEach(async () => {
    await system?.stop();
    await flushRedis();
  });

  it('three accounts with different backlogs share the slots evenly while each has work', async () => {
    // Runs of 100 ms: the fair share is of slots, so starts split evenly only while runs last about
    // as long as each other; the protocol's few milliseconds of jitter must stay small beside them.
    system = await FairSystem.start({ REDIS_URL: redisServer.url }, () => ({ delayMs: 100 }));
    const customers = [await system.customer(), await system.customer(), await system.customer()];
    // Backlogs of 24, 12 and 6, created before any worker runs (the oldest are A's).
    for (const [c, n] of [[customers[0]!, 24], [customers[1]!, 12], [customers[2]!, 6]] as const) await system.create(c, n);
    await system.worker({ WORKER_CONCURRENCY: '3' });
    await system.waitForStatus(customers.flatMap((c) => c.tasks), 20);

    const order = starts(system.model).map(ownerOf(customers));
    // The first 18 starts (while all three have tasks waiting): a third each, within one.
    const counts = [0, 1, 2].map((i) => order.slice(0, 18).filter((o) => o === i).length);
    for (const n of counts) expect(n).toBeGreaterThanOrEqual(5);
    for (const n of counts) expect(n).toBeLessThanOrEqual(7);
    // Then the two with work left share the three slots (two and one: a tie goes to the older
    // tasks, A's), and A finishes alone: nominally B's last start is the 36th of 42, so the last
    // six are A's; three leave room for a slot freed a moment late.
    const middle = order.slice(18, 30);
    for (const owner of [0, 1]) expect(middle.filter((o) => o === owner).length).toBeGreaterThanOrEqual(3);
    expect(order.slice(-3)).toEqual([0, 0, 0]);
  }, 90_000);

  it("an account's cap holds across two worker processes and both kinds, while the others use the free slots", async () => {
    // Every run is held until the test has seen the slots filled: the picture does not depend on
    // how fast this machine creates tasks beside runs that end on their own.
    system = await FairSystem.start({ REDIS_URL: redisServer.url }, () => 'hold');
    const [a, b] = [await system.customer(), await system.customer()];
    const set = await admin(system.env, 'set-max-running', '--email', a.account.email, '--max', '2');
    expect(JSON.parse(set.stdout)).toEqual({ account_id: a.account.id, max_running: 2 });
    await system.workerProcess({ WORKER_CONCURRENCY: '3' });
    await system.workerProcess({ WORKER_CONCURRENCY: '3' });
    // The workers apply the operator's cap within seconds.
    await waitFor(async () => (await system.api.deps.taskLifecycle.queueFigures.accountLoad(a.account.id)).maxRunning === 2, { timeoutMs: 5_000, what: "A's cap of 2 in force" });

    await system.create(a, 8);
    await system.create(a, 4, 'video-generation');
    await system.create(b, 12);
    // Six slots in all: A holds its two, with ten of its tasks waiting, and B took the four A could
    // not use.
    const running = () => {
      const ids = system.model.inFlight();
      return { a: ids.filter((id) => a.tasks.includes(id)).length, b: ids.filter((id) => b.tasks.includes(id)).length };
    };
    await waitFor(() => running().a === 2 && running().b === 4, { what: "A's two and B's four running" });
    expect(running()).toEqual({ a: 2, b: 4 });
    await system.drain([...a.tasks, ...b.tasks]);

    const ofA = system.model.requests.filter((r) => a.tasks.includes(r.publicId));
    const ofB = system.model.requests.filter((r) => b.tasks.includes(r.publicId));
    expect(maxOverlap(ofA)).toBe(2);
    expect(maxOverlap(ofB)).toBeGreaterThanOrEqual(4);
    // And the database agrees: A's [started, finished) intervals never overlap more than 2.
    const { rows } = await system.api.deps.db.pool.query<{ started: Date; finished: Date }>(
      'SELECT started_at AS started, finished_at AS finished FROM tasks WHERE public_id = ANY($1)',
      [a.tasks],
    );
    expect(maxOverlap(rows.map((r, i) => ({ publicId: String(i), n: 1, at: r.started.getTime(), endedAt: r.finished.getTime() })))).toBeLessThanOrEqual(2);
  }, 90_000);

  it('a changed cap applies within 5 s without a restart; the console and /metrics show who runs and who is held; a cancel frees a place at once', async () => {
    system = await FairSystem.start({ REDIS_URL: redisServer.url }, () => 'hold', { ACCOUNT_MAX_RUNNING: '2' });
    const a = await system.customer();
    await system.worker({ WORKER_CONCURRENCY: '6' });
    await system.create(a, 7);
    await waitFor(() => system.model.inFlight().length === 2, { what: "two of A's tasks running" });

    const concurrency = async () => (await system.api.req('GET', '/api/console/concurrency', { headers: a.account.auth })).body;
    expect(await concurrency()).toEqual({ running: 2, max_running: 2, waiting: 5, held_by_cap: 5 });
    // Held tasks are not runnable: an autoscaler sees no work a new worker could take.
    expect(await metric(system.api, 'taskapi_queue_depth', 'image-generation')).toBe(0);
    expect(await metric(system.api, 'taskapi_tasks_held_by_cap', 'image-generation')).toBe(5);
    expect(await metric(system.api, 'taskapi_queue_oldest_waiting_seconds', 'image-generation')).toBe(0);

    // A waiting task cancelled: out of the line at once.
    const cancelled = a.tasks[6]!;
    expect((await system.api.req('POST', `/api/tasks/${cancelled}/cancel`, { headers: withKey(a.key) })).status).toBe(200);
    expect(await concurrency()).toEqual({ running: 2, max_running: 2, waiting: 4, held_by_cap: 4 });

    const raised = await admin(system.env, 'set-max-running', '--email', a.account.email, '--max', '4');
    expect(raised.code).toBe(0);
    const changedAt = Date.now();
    await waitFor(() => system.model.inFlight().length === 4, { timeoutMs: 5_000, what: 'the raised cap (4) to apply on the running worker' });
    expect(Date.now() - changedAt).toBeLessThan(5_000);
    expect(await concurrency()).toEqual({ running: 4, max_running: 4, waiting: 2, held_by_cap: 2 });

    const reset = await admin(system.env, 'set-max-running', '--email', a.account.email, '--reset');
    expect(JSON.parse(reset.stdout)).toEqual({ account_id: a.account.id, max_running: 2 });
    await waitFor(async () => (await system.api.deps.taskLifecycle.queueFigures.accountLoad(a.account.id)).maxRunning === 2, { timeoutMs: 5_000, what: 'the default cap back in force' });
    // Four run under a cap of two: as they end one by one, nothing new is released until fewer than
    // two run (each end is told to the scheduler, which decides in the same call).
    const before = system.model.requests.length;
    const queue = system.api.deps.taskQueues.queues['image-generation'];
    const running = [...system.model.inFlight()];
    for (const [i, id] of running.entries()) {
      system.model.release(id);
      const left = running.length - i - 1;
      // In service: the four not yet ended, and once fewer than two, the newly released ones (two).
      await waitFor(async () => (await system.api.deps.taskLifecycle.queueFigures.accountLoad(a.account.id)).running === Math.max(left, 2), {
        what: `${left} of the four left running`,
      });
      if (left >= 2) {
        expect(await queue.getWaitingCount()).toBe(0);
        expect(system.model.requests.length).toBe(before);
      }
    }
    // Below the cap again: A's last two run, never more than two at once.
    await waitFor(() => system.model.requests.length === before + 2, { what: "A's last two tasks started" });
    await system.drain(a.tasks.slice(0, 6));
    expect(maxOverlap(system.model.requests.filter((r) => a.tasks.includes(r.publicId) && r.at >= system.model.requests[before]!.at))).toBeLessThanOrEqual(2);
  }, 60_000);

  it('SIGTERM mid-burst: the handed-back tasks keep their places and run first on the next worker', async () => {
    system = await FairSystem.start({ REDIS_URL: redisServer.url }, () => 'hold');
    const [a, b] = [await system.customer(), await system.customer()];
    await system.create(a, 4);
    await system.create(b, 4);
    const first = await system.workerProcess({ WORKER_CONCURRENCY: '2' });
    await waitFor(() => system.model.inFlight().length === 2, { what: 'two tasks running' });
    // The fair share: A's oldest, then B's (it had none running).
    expect(system.model.inFlight().sort()).toEqual([a.tasks[0], b.tasks[0]].sort());

    await first.kill('SIGTERM');
    expect(first.child.exitCode).toBe(0);
    expect(first.logs.filter((l) => l.message === 'task handed back to the queue (worker shutting down)').map((l) => l.public_id).sort()).toEqual(
      [a.tasks[0], b.tasks[0]].sort(),
    );
    // Their predictions run on (a shutdown does not throw GPU work away).
    expect(system.model.inFlight().sort()).toEqual([a.tasks[0], b.tasks[0]].sort());
    const puts = () => system.model.server.putRequests();
    const before = puts();

    await system.worker({ WORKER_CONCURRENCY: '2' });
    // Not the back of the kind's line: the same two, first, re-attached to their predictions.
    const again = (id: string) => Object.entries(puts()).some(([p, n]) => p.startsWith(`${id}-`) && n > (before[p] ?? 0));
    await waitFor(() => again(a.tasks[0]!) && again(b.tasks[0]!), { what: 'the next worker to re-attach to the same two' });
    expect(system.model.inFlight().sort()).toEqual([a.tasks[0], b.tasks[0]].sort());
    expect(system.model.requests.filter((r) => r.n > 1)).toEqual([]);
    await system.drain([...a.tasks, ...b.tasks]);
  }, 60_000);

  it('a transient engine failure is retried at the front of its account’s line, not the back of the kind’s', async () => {
    let failAt = 0;
    let firstOfA = '';
    system = await FairSystem.start(
      { REDIS_URL: redisServer.url },
      (publicId, n) => {
        if (n === 1 && publicId === firstOfA) {
          failAt = Date.now();
          return { delayMs: 0, canceled: true };
        }
        return { delayMs: 40 };
      },
      { TASK_RETRY_BACKOFF_MS: '400' },
    );
    const a = await system.customer();
    await system.create(a, 1);
    firstOfA = a.tasks[0]!;
    await system.create(a, 29);
    await system.worker({ WORKER_CONCURRENCY: '1' });
    await system.waitForStatus(a.tasks, 20);

    const retry = system.model.requests.find((r) => r.publicId === firstOfA && r.n === 2)!;
    expect(retry).toBeDefined();
    // Once its back-off was over, it went next (a start already under way may come first).
    const afterDue = system.model.requests.filter((r) => r.at >= failAt + 400);
    expect(afterDue.slice(0, 3).map((r) => r.publicId)).toContain(firstOfA);
    // In a first-in-first-out queue it would have waited behind all the others.
    expect(system.model.requests.indexOf(retry)).toBeLessThan(25);
    const { rows } = await system.api.deps.db.pool.query('SELECT attempts, status FROM tasks WHERE public_id = $1', [firstOfA]);
    expect(rows[0]).toEqual({ attempts: 2, status: 20 });
  }, 60_000);

  it('FLUSHDB in the middle of a burst loses nothing: every task runs, is charged once, and the fair share resumes', async () => {
    system = await FairSystem.start({ REDIS_URL: redisServer.url }, () => ({ delayMs: 50 }), { SWEEPER_INTERVAL_MS: '500' });
    const [a, b] = [await system.customer(), await system.customer()];
    await system.worker({ WORKER_CONCURRENCY: '2' });
    await system.create(a, 30);
    await system.model.waitForRequests(5);
    await flushRedis();
    await system.create(b, 1);
    await system.waitForStatus([...a.tasks, ...b.tasks], 20);

    const { rows } = await system.api.deps.db.pool.query<{ entry_type: string; n: number }>(
      `SELECT l.entry_type::text AS entry_type, count(*)::int AS n FROM credit_ledger l JOIN tasks t ON t.id = l.task_id
        WHERE t.public_id = ANY($1) GROUP BY 1`,
      [[...a.tasks, ...b.tasks]],
    );
    expect(rows).toEqual([{ entry_type: 'charge', n: 31 }]);
    // B's task, created after the loss, did not wait for A's restored backlog.
    const order = starts(system.model).map(ownerOf([a, b]));
    expect(order.lastIndexOf(0)).toBeGreaterThan(order.indexOf(1));
  }, 90_000);

  it('jobs queued by the previous release (no scheduler) still run, counted while they run; a corrupt entry is logged and skipped', async () => {
    system = await FairSystem.start({ REDIS_URL: redisServer.url }, () => 'hold', { SWEEPER_INTERVAL_MS: '500' });
    const a = await system.customer();
    await system.create(a, 3);
    // As the previous release left them: Redis holds only BullMQ jobs whose data is the public id.
    await flushRedis();
    const connection = new Redis(redisServer.url, { maxRetriesPerRequest: null });
    const queue = new Queue(TASK_QUEUES['image-generation'].name, { connection });
    for (const id of a.tasks) await queue.add('image-generation', { public_id: id }, { jobId: id });
    await queue.close();
    connection.disconnect();

    const worker = await system.workerProcess({ WORKER_CONCURRENCY: '2' });
    await waitFor(() => system.model.inFlight().length === 2, { what: 'two old jobs running' });
    // Their starts are reported with the worker's next call to the scheduler, within moments.
    await waitFor(async () => (await system.api.deps.taskLifecycle.queueFigures.accountLoad(a.account.id)).running === 2, { timeoutMs: 2_000, what: 'the old jobs counted' });

    // Tasks of this release: both wait in B's line (the worker's slots are taken by the old jobs),
    // the second with a corrupt entry. It is skipped and logged when its turn comes, the kind keeps
    // moving, and the sweeper gives it back.
    const b = await system.customer();
    await system.create(b, 2);
    const redis = new Redis(redisServer.url);
    await redis.hset('taskapi:{sched}:tasks', b.tasks[1]!, 'not a record');
    redis.disconnect();
    await waitFor(
      () => {
        system.model.releaseAll();
        return worker.logs.some((l) => String(l.message).startsWith('scheduling entries skipped') && (l.public_ids as string[]).includes(b.tasks[1]!));
      },
      { what: 'the corrupt entry to be reported' },
    );
    await system.drain([...a.tasks, ...b.tasks]);
    await waitFor(async () => (await system.api.deps.taskLifecycle.queueFigures.accountLoad(a.account.id)).running === 0, { what: "the old jobs' places freed" });
    expect(await system.api.deps.taskLifecycle.queueFigures.inService('image-generation')).toEqual([]);
  }, 60_000);
});
