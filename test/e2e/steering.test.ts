// Steering tasks through the public edge (docs/api.md, "Order, lifetime and fairness inside an account";
// "Bulk cancel"): priority, ttl_seconds and fairness_key on real workers, on a Cog model stub that
// records which task runs when and holds predictions while the test looks; the queue position in
// the task JSON; bulk cancel of a mix; every bad input of the new fields. A database and a Redis
// server of this file's own, so its sweepers and workers see only its tasks.
import { Redis } from 'ioredis';
import { recreateDatabase, startPrivateRedis, testDatabaseUrl, waitFor, type PrivateRedis } from '@taskapi/testing';
import { createKey, seedAccount, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from '../../services/api/test/support/harness';
import { startModelStub, type ModelStub, type StubAnswer } from './support/model-stub';
import { startWorker, type Running } from './support/system';
import { ledgerOf, waitForTask } from './support/tasks';

const DATABASE_URL = testDatabaseUrl('steering');

describe('steering tasks', () => {
  let redis: PrivateRedis;
  let api: TestApi;
  let model: ModelStub;
  let env: Record<string, string>;
  let policy: (publicId: string, n: number) => StubAnswer = () => 'hold';
  const running: Running[] = [];

  beforeAll(async () => {
    await recreateDatabase(DATABASE_URL);
    redis = await startPrivateRedis();
    model = await startModelStub((id, n) => policy(id, n));
    env = {
      DATABASE_URL,
      REDIS_URL: `${redis.url}/0`,
      SWEEPER_INTERVAL_MS: '3600000',
      RATE_LIMIT_PAID_PER_MINUTE: '100000',
      ENGINE_IMAGE: 'cog',
      COG_URL_IMAGE: model.url,
      // The stub runs 256 predictions at once: every worker slot may send one.
      COG_MAX_CONCURRENCY_IMAGE: '256',
      WORKER_KINDS: 'image-generation',
    };
    api = await startApi(env);
    env.COG_WEBHOOK_BASE_URL = api.url;
  });
  afterEach(async () => {
    model.releaseAll();
    await Promise.all(running.splice(0).map((w) => w.stop()));
  });
  afterAll(async () => {
    await api?.close();
    await model?.close();
    await redis?.stop();
  });

  async function customer(credits = 10_000): Promise<{ account: TestAccount; key: CreatedKey }> {
    const account = await seedAccount(api, { credits });
    return { account, key: await createKey(api, account, { type: 'paid' }) };
  }
  async function create(key: CreatedKey, extra: Record<string, unknown> = {}): Promise<any> {
    const res = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'steer', width: 64, height: 64, ...extra } });
    expect(res.status).toBe(201);
    return res.body;
  }
  const get = async (key: CreatedKey, id: string) => (await api.req('GET', `/api/tasks/${id}`, { headers: withKey(key) })).body;
  async function worker(concurrency: number): Promise<void> {
    running.push(await startWorker({ ...env, WORKER_CONCURRENCY: String(concurrency) }));
  }
  /** The task ids in the order their predictions started. */
  const started = () => model.requests.map((r) => r.publicId);
  const waitForStarted = (n: number) => waitFor(() => started().length >= n, { timeoutMs: 15_000, what: `${n} predictions started` });
  const balance = async (account: TestAccount) => (await api.req('GET', '/api/credits/balance', { headers: account.auth })).body.paid_balance as number;

  it('priority: a task created later with a priority runs before the account\'s older ones; the fields are echoed', async () => {
    policy = () => 'hold';
    const { key } = await customer();
    const first = await create(key);
    await worker(1);
    await waitForStarted(model.requests.length + 1);
    const before = started().length;
    const older = [await create(key), await create(key)];
    const urgent = await create(key, { priority: 3600, ttl_seconds: 600, fairness_key: 'user-7' });
    expect(urgent).toMatchObject({ priority: 3600, ttl_seconds: 600, fairness_key: 'user-7', status: 0 });
    expect(older[0]).toMatchObject({ priority: null, ttl_seconds: null, fairness_key: null });
    policy = () => ({ delayMs: 20 });
    model.release(first.public_id);
    await waitForStarted(before + 3);
    expect(started().slice(before)).toEqual([urgent.public_id, older[0].public_id, older[1].public_id]);
    for (const t of [urgent, ...older]) expect((await waitForTask(api, key.plaintext, t.public_id)).status).toBe(20);
  });

  it('queue position: how many of the account\'s tasks of the kind and key start before it, and whether the cap holds it; falling as tasks start', async () => {
    policy = () => 'hold';
    const { key } = await customer();
    await worker(1);
    const tasks = [await create(key), await create(key), await create(key), await create(key)];
    await waitFor(() => model.inFlight().includes(tasks[0].public_id), { what: 'the first to run' });
    // Created answers already carry the place their submission found.
    expect(tasks[3].queue).toEqual({ ahead: 2, held_by_account_cap: false });
    const ahead = async () => Promise.all(tasks.slice(1).map(async (t) => (await get(key, t.public_id)).queue?.ahead));
    expect(await ahead()).toEqual([0, 1, 2]);
    expect((await get(key, tasks[0].public_id)).queue).toBeNull();
    model.release(tasks[0].public_id);
    await waitFor(() => model.inFlight().includes(tasks[1].public_id), { what: 'the second to run' });
    expect((await ahead()).slice(1)).toEqual([0, 1]);
    // The list shows the same places.
    const listed = (await api.req('GET', '/api/tasks?status=0', { headers: withKey(key) })).body.data as any[];
    expect(listed.map((t) => t.queue.ahead).sort()).toEqual([0, 1]);
    policy = () => ({ delayMs: 10 });
    model.releaseAll();
    for (const t of tasks) await waitForTask(api, key.plaintext, t.public_id);
  });

  it('fairness keys take turns under the account cap: one user\'s burst does not hold the others', async () => {
    policy = () => 'hold';
    const { account, key } = await customer();
    // The account's own cap of 2, in the database (a worker's upkeep keeps the scheduler to it)
    // and in the scheduler before any task of it can be released.
    await api.deps.repos.accounts.setMaxRunning(account.id, 2);
    await api.deps.taskLifecycle.capacity.setCaps(new Map([[account.id, 2]]));
    const burst = [];
    for (let i = 0; i < 5; i++) burst.push(await create(key, { fairness_key: 'bulk-user' }));
    const other = await create(key, { fairness_key: 'interactive-user' });
    const before = started().length;
    await worker(4);
    await waitForStarted(before + 2);
    // The cap lets two run: the burst's oldest and the other user's, not two of the burst.
    expect(started().slice(before).sort()).toEqual([burst[0].public_id, other.public_id].sort());
    const consoleQueue = (await api.req('GET', '/api/console/fairness-keys', { headers: account.auth })).body;
    expect(consoleQueue.data).toEqual([
      { kind: 'image-generation', fairness_key: 'bulk-user', waiting: 4, running: 1 },
      { kind: 'image-generation', fairness_key: 'interactive-user', waiting: 0, running: 1 },
    ]);
    expect((await api.req('GET', '/api/tasks?fairness_key=interactive-user', { headers: withKey(key) })).body.data.map((t: any) => t.public_id)).toEqual([other.public_id]);
    policy = () => ({ delayMs: 10 });
    model.releaseAll();
    for (const t of [...burst, other]) await waitForTask(api, key.plaintext, t.public_id);
    await api.deps.repos.accounts.setMaxRunning(account.id, null);
  });

  it('ttl_seconds: a task not started in time expires within 2 s of its deadline, refunded once, no webhook; a started one never expires', async () => {
    policy = () => 'hold';
    const { account, key } = await customer(1_000);
    await worker(1);
    const blocker = await create(key, { ttl_seconds: 1 });
    await waitFor(() => model.inFlight().includes(blocker.public_id), { what: 'the blocker to run' });
    const doomed = await create(key, { ttl_seconds: 1, callback_url: 'https://hooks.example/never' });
    const expired = await waitForTask(api, key.plaintext, doomed.public_id, [40], 10_000);
    expect(expired).toMatchObject({ status: 40, error_code: 'expired', error_message: expect.stringContaining('ttl_seconds'), started_at: null, queue: null });
    const late = new Date(expired.finished_at).getTime() - (new Date(expired.created_at).getTime() + 1_000);
    expect(late).toBeLessThanOrEqual(2_000);
    expect((await ledgerOf(api, doomed.public_id)).map((l) => l.entry_type)).toEqual(['charge', 'refund']);
    expect((await api.deps.db.pool.query('SELECT 1 FROM webhook_deliveries d JOIN tasks t ON t.id = d.task_id WHERE t.public_id = $1', [doomed.public_id])).rowCount).toBe(0);
    // The blocker started before its deadline: it runs on past it (another sweep or two), to its end.
    const blockerDeadline = new Date(blocker.created_at).getTime() + 1_000;
    await waitFor(() => Date.now() > blockerDeadline + 1_500, { timeoutMs: 5_000, what: "the blocker's deadline long past" });
    expect((await get(key, blocker.public_id)).status).toBe(10);
    policy = () => ({ delayMs: 10 });
    model.release(blocker.public_id);
    expect((await waitForTask(api, key.plaintext, blocker.public_id)).status).toBe(20);
    expect(await balance(account)).toBe(1_000 - 2);
  });

  it('expiry racing starts: each task is started or expired, never both, and refunded exactly when expired', async () => {
    policy = () => ({ delayMs: 30 });
    const { account, key } = await customer(1_000);
    const tasks: any[] = [];
    for (let i = 0; i < 24; i++) tasks.push(await create(key, { ttl_seconds: 1 }));
    // The worker comes just as the deadlines pass: some start in time, the rest expire.
    await new Promise((resolve) => setTimeout(resolve, 700));
    await worker(2);
    const ended = await Promise.all(tasks.map((t) => waitForTask(api, key.plaintext, t.public_id, [20, 30, 40], 20_000)));
    let refunds = 0;
    for (const t of ended) {
      const ledger = (await ledgerOf(api, t.public_id)).map((l) => l.entry_type);
      if (t.status === 20) {
        expect(ledger).toEqual(['charge']);
        expect(t.started_at).not.toBeNull();
      } else {
        expect(t).toMatchObject({ status: 40, error_code: 'expired', started_at: null });
        expect(ledger).toEqual(['charge', 'refund']);
        refunds++;
      }
    }
    // Started tasks never ran as expired ones: every prediction is a completed task's.
    const completed = new Set(ended.filter((t) => t.status === 20).map((t) => t.public_id));
    expect(model.requests.filter((r) => tasks.some((t) => t.public_id === r.publicId)).every((r) => completed.has(r.publicId))).toBe(true);
    expect(await balance(account)).toBe(1_000 - 2 * (24 - refunds));
  });

  it('after a Redis loss, with two API replicas: deadlines still expire on time, refunded once, and the lines come back with their priorities', async () => {
    policy = () => 'hold';
    const { account, key } = await customer(1_000);
    const replica = await startApi(env);
    try {
      const plain = await create(key);
      const urgent = await create(key, { priority: 3600, fairness_key: 'user-1' });
      const doomed: any[] = [];
      for (let i = 0; i < 10; i++) doomed.push(await create(key, { ttl_seconds: 1 }));
      const flush = new Redis(redis.url, { maxRetriesPerRequest: 1 });
      await flush.flushall();
      flush.disconnect();
      // Both replicas sweep every 500 ms from PostgreSQL: each task expires once, on time.
      const ended = await Promise.all(doomed.map((t) => waitForTask(api, key.plaintext, t.public_id, [40], 10_000)));
      for (const t of ended) {
        expect(t).toMatchObject({ status: 40, error_code: 'expired' });
        expect(new Date(t.finished_at).getTime() - new Date(t.created_at).getTime()).toBeLessThanOrEqual(3_000);
        expect((await ledgerOf(api, t.public_id)).map((l) => l.entry_type)).toEqual(['charge', 'refund']);
      }
      expect(await balance(account)).toBe(1_000 - 2 * 2);
      // The worker's sweeper puts the two survivors back in their line from PostgreSQL, the
      // priority and the key with them: the urgent one runs first.
      const before = started().length;
      running.push(await startWorker({ ...env, WORKER_CONCURRENCY: '1', SWEEPER_INTERVAL_MS: '300' }));
      await waitForStarted(before + 1);
      expect(started()[before]).toBe(urgent.public_id);
      policy = () => ({ delayMs: 10 });
      model.releaseAll();
      for (const t of [urgent, plain]) expect((await waitForTask(api, key.plaintext, t.public_id)).status).toBe(20);
    } finally {
      await replica.close();
    }
  });

  it('bulk cancel by ids: queued, running (its engine stopped), finished, unknown and repeated ids; refunded once; a retry cancels nothing twice', async () => {
    policy = () => 'hold';
    const { account, key } = await customer(1_000);
    await worker(1);
    policy = () => ({ delayMs: 10 });
    const done = await create(key);
    await waitForTask(api, key.plaintext, done.public_id);
    policy = () => 'hold';
    const runningTask = await create(key);
    await waitFor(() => model.inFlight().includes(runningTask.public_id), { what: 'a running task' });
    const queued = [await create(key), await create(key)];
    const ids = [queued[0].public_id, runningTask.public_id, done.public_id, 'task_doesNotExist00000000', queued[1].public_id, queued[0].public_id];
    const res = await api.req('POST', '/api/tasks/cancel', { headers: withKey(key), body: { ids } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      cancelled: 3,
      results: [
        { public_id: queued[0].public_id, outcome: 'cancelled' },
        { public_id: runningTask.public_id, outcome: 'cancelled' },
        { public_id: done.public_id, outcome: 'already_finished' },
        { public_id: 'task_doesNotExist00000000', outcome: 'not_found' },
        { public_id: queued[1].public_id, outcome: 'cancelled' },
        { public_id: queued[0].public_id, outcome: 'cancelled' },
      ],
    });
    // The running engine stops: its prediction is cancelled on the model server.
    await waitFor(() => !model.inFlight().includes(runningTask.public_id), { timeoutMs: 5_000, what: 'the running prediction to stop' });
    for (const t of [...queued, runningTask]) {
      expect((await get(key, t.public_id)).status).toBe(40);
      expect((await ledgerOf(api, t.public_id)).map((l) => l.entry_type)).toEqual(['charge', 'refund']);
    }
    const again = await api.req('POST', '/api/tasks/cancel', { headers: withKey(key), body: { ids } });
    expect(again.body.cancelled).toBe(0);
    expect(again.body.results.map((r: any) => r.outcome)).toEqual(['already_finished', 'already_finished', 'already_finished', 'not_found', 'already_finished', 'already_finished']);
    expect(await balance(account)).toBe(1_000 - 2);
  });

  it('bulk cancel by filter: every non-terminal task matching, in batches, one request for the rate limit', async () => {
    policy = () => 'hold';
    const { account, key } = await customer(10_000);
    const mine = [];
    for (let i = 0; i < 450; i++) mine.push(i % 3 === 0 ? 'a' : 'b');
    const created = [];
    for (const k of mine) created.push(await create(key, { fairness_key: `user-${k}` }));
    const limitBefore = (await api.req('GET', '/api/tasks?limit=1', { headers: withKey(key) })).headers.get('ratelimit');
    const res = await api.req('POST', '/api/tasks/cancel', { headers: withKey(key), body: { filter: { kind: 'image-generation', status: 0, fairness_key: 'user-b' } } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ cancelled: 300 });
    const remaining = (await api.req('GET', '/api/tasks?limit=1', { headers: withKey(key) })).headers.get('ratelimit');
    // The cancel counted once: two requests since the first reading (the cancel and this one).
    expect(Number(/r=(\d+)/.exec(limitBefore!)![1]) - Number(/r=(\d+)/.exec(remaining!)![1])).toBe(2);
    const statuses = await api.deps.db.pool.query<{ fairness_key: string; status: number; n: number }>(
      'SELECT fairness_key, status, count(*)::int AS n FROM tasks WHERE account_id = $1 GROUP BY 1, 2 ORDER BY 1, 2',
      [account.id],
    );
    expect(statuses.rows).toEqual([
      { fairness_key: 'user-a', status: 0, n: 150 },
      { fairness_key: 'user-b', status: 40, n: 300 },
    ]);
    expect(await balance(account)).toBe(10_000 - 2 * 150);
    expect((await api.req('POST', '/api/tasks/cancel', { headers: withKey(key), body: { filter: {} } })).body).toEqual({ cancelled: 150 });
    expect(await balance(account)).toBe(10_000);
  });

  it('bad input: every new field refused with 400 naming it, and nothing changed', async () => {
    const { account, key } = await customer(1_000);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ priority: 86_401 }, 'priority'],
      [{ priority: -86_401 }, 'priority'],
      [{ priority: 1.5 }, 'priority'],
      [{ priority: '10' }, 'priority'],
      [{ ttl_seconds: 0 }, 'ttl_seconds'],
      [{ ttl_seconds: 604_801 }, 'ttl_seconds'],
      [{ ttl_seconds: true }, 'ttl_seconds'],
      [{ fairness_key: '' }, 'fairness_key'],
      [{ fairness_key: 'x'.repeat(65) }, 'fairness_key'],
      [{ fairness_key: 'has space' }, 'fairness_key'],
      [{ fairness_key: 'ünïcode' }, 'fairness_key'],
      [{ fairness_key: 42 }, 'fairness_key'],
    ];
    for (const [extra, field] of cases) {
      const res = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'bad', width: 64, height: 64, ...extra } });
      expect({ extra, status: res.status }).toEqual({ extra, status: 400 });
      expect(res.body.errors.map((e: any) => e.field)).toContain(field);
    }
    const batch = await api.req('POST', '/api/tasks/image-generation/batch', { headers: withKey(key), body: { tasks: [{ prompt: 'ok' }, { prompt: 'bad', priority: 1e9 }] } });
    expect(batch.status).toBe(400);
    expect(batch.body.errors.map((e: any) => e.field)).toEqual(['tasks[1].priority']);
    const bulk: Array<[unknown, string]> = [
      [{}, 'Request body'],
      [{ ids: ['task_x'], filter: {} }, 'Request body'],
      [{ ids: [] }, 'ids'],
      [{ ids: Array.from({ length: 1001 }, (_, i) => `task_${i}`) }, 'ids'],
      [{ ids: [42] }, 'ids[0]'],
      [{ filter: { colour: 'red' } }, 'filter.colour'],
      [{ filter: { status: 20 } }, 'filter.status'],
      [{ filter: { kind: 'poetry' } }, 'filter.kind'],
      [{ filter: { fairness_key: 'no spaces' } }, 'filter.fairness_key'],
      [{ cancel: 'everything' }, 'cancel'],
    ];
    for (const [body, field] of bulk) {
      const res = await api.req('POST', '/api/tasks/cancel', { headers: withKey(key), body });
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
      expect(res.body.errors.map((e: any) => e.field)).toContain(field);
    }
    const list = await api.req('GET', '/api/tasks?fairness_key=a%20b', { headers: withKey(key) });
    expect(list.status).toBe(400);
    expect(list.body.errors.map((e: any) => e.field)).toEqual(['fairness_key']);
    // Nothing was created or charged.
    expect((await api.deps.db.pool.query('SELECT count(*)::int AS n FROM tasks WHERE account_id = $1', [account.id])).rows[0].n).toBe(0);
    expect(await balance(account)).toBe(1_000);
  });
});
