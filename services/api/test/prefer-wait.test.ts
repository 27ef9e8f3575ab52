import { TaskStatus } from '@taskapi/domain';
import { waitFor } from '@taskapi/testing';
import { Redis } from 'ioredis';
import { TEST_REDIS_URL } from '@taskapi/testing';
import { createLogger } from '@taskapi/logger';
import { preferredWaitSeconds } from '../src/domain/prefer-wait';
import { TaskWaiters } from '../src/domain/task-waiters';
import { waitForTask } from '../src/domain/wait-for-task';
import { createKey, seedAccount, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from './support/harness';

/** Counts every statement and checkout on the API's real pg pool (Prisma and raw SQL share it). */
function countDatabaseUse(api: TestApi): { readonly count: number } {
  const pool = api.deps.db.pool;
  const counter = { count: 0 };
  const query = pool.query.bind(pool);
  const connect = pool.connect.bind(pool);
  (pool as any).query = (...args: any[]) => {
    counter.count++;
    return (query as any)(...args);
  };
  (pool as any).connect = (...args: any[]) => {
    counter.count++;
    return (connect as any)(...args);
  };
  return counter;
}

describe('Prefer: wait (long-poll on terminal task events)', () => {
  let api: TestApi;
  let account: TestAccount;
  let key: CreatedKey;
  let db: { readonly count: number };
  beforeAll(async () => {
    api = await startApi({ RATE_LIMIT_PAID_PER_MINUTE: '100000' });
    account = await seedAccount(api, { credits: 100_000 });
    key = await createKey(api, account, { type: 'paid' });
    // The replica's own expiry sweep (a statement every 500 ms, not a waiter's) would be counted too.
    await api.deps.expirySweep.stop();
    db = countDatabaseUse(api);
  });
  afterAll(async () => {
    await api.close();
  });

  const create = async () => (await api.req('POST', '/api/tasks/face-detection', { headers: withKey(key), body: { image_url: 'https://example.com/a.jpg' } })).body.public_id as string;
  const complete = (id: string) =>
    api.deps.taskLifecycle.repair.end(id, { status: TaskStatus.completed, result: { faces: [] } });
  const getWaiting = (id: string, prefer: string) => api.req('GET', `/api/tasks/${id}`, { headers: { ...withKey(key), prefer } });
  const waiters = (n: number) => waitFor(() => api.deps.taskWaiters.size === n, { what: `${n} waiting requests` });
  /** Until the API's queries stop (a waiter is registered before its first read, which follows). */
  const quiet = async () => {
    let last = -1;
    await waitFor(() => {
      const same = db.count === last;
      last = db.count;
      return same;
    }, { intervalMs: 100, what: 'the API to stop querying' });
  };

  it('answers as soon as the task completes, running no query while it waits', async () => {
    const id = await create();
    const started = Date.now();
    const pending = getWaiting(id, 'wait=30');
    await waiters(1);
    await quiet();
    const before = db.count;
    // Held long enough that a polling implementation would have queried.
    await new Promise((r) => setTimeout(r, 300));
    expect(db.count).toBe(before);
    await complete(id);
    const res = await pending;
    expect(res.status).toBe(200);
    expect(res.body.status).toBe(20);
    expect(res.body.result).toEqual({ faces: [] });
    expect(res.headers.get('preference-applied')).toBe('wait=30');
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(api.deps.taskWaiters.size).toBe(0);
    // The counter does see this API's queries: the completed row was read once it was announced.
    expect(db.count).toBeGreaterThan(before);
  });

  it('after N seconds answers with the current state and Preference-Applied', async () => {
    const id = await create();
    const started = Date.now();
    const res = await getWaiting(id, 'wait=1');
    const elapsed = Date.now() - started;
    expect(res.status).toBe(200);
    expect(res.body.status).toBe(0);
    expect(res.headers.get('preference-applied')).toBe('wait=1');
    expect(elapsed).toBeGreaterThanOrEqual(950);
    expect(elapsed).toBeLessThan(5_000);
  });

  it('wakes 500 concurrent waiters of one process with one event, without queries while they wait', async () => {
    const id = await create();
    const pending = Array.from({ length: 500 }, () => getWaiting(id, 'wait=60'));
    await waiters(500);
    await quiet();
    const before = db.count;
    await new Promise((r) => setTimeout(r, 200));
    expect(db.count).toBe(before);
    const started = Date.now();
    await complete(id);
    const results = await Promise.all(pending);
    expect(Date.now() - started).toBeLessThan(20_000);
    // The finish itself, then one read of the completed row shared by all 500 woken requests.
    expect(db.count - before).toBeLessThanOrEqual(5);
    for (const r of results) {
      expect(r.status).toBe(200);
      expect(r.body.status).toBe(20);
      expect(r.headers.get('preference-applied')).toBe('wait=60');
    }
    expect(api.deps.taskWaiters.size).toBe(0);
  });

  it('a task already terminal is answered at once', async () => {
    const id = await create();
    await complete(id);
    const started = Date.now();
    const res = await getWaiting(id, 'wait=30');
    expect(res.body.status).toBe(20);
    expect(res.headers.get('preference-applied')).toBe('wait=30');
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('an event published between registering and the first read is not missed (subscribe, then read)', async () => {
    const id = await create();
    let reads = 0;
    const reader = {
      readCurrent: async (accountId: string, publicId: string) => {
        const row = await api.deps.taskReader.readCurrent(accountId, publicId);
        // The worst interleaving: the task finishes (and its event is published) right after the
        // waiter's first read returned the queued row.
        if (reads++ === 0) await complete(id);
        return row;
      },
    };
    const started = Date.now();
    const outcome = await waitForTask({ taskReader: reader as never, taskWaiters: api.deps.taskWaiters }, account.id, id, 30, () => undefined);
    expect(outcome.task?.row.status).toBe(20);
    expect(outcome.applied).toBe(true);
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('a cancel wakes waiters', async () => {
    const id = await create();
    const pending = getWaiting(id, 'wait=30');
    await waiters(1);
    expect((await api.req('POST', `/api/tasks/${id}/cancel`, { headers: withKey(key) })).status).toBe(200);
    const res = await pending;
    expect(res.body.status).toBe(40);
    expect(res.headers.get('preference-applied')).toBe('wait=30');
  });

  it('creation with Prefer: wait answers 201 with the terminal task when it finishes in time', async () => {
    const pending = api.req('POST', '/api/tasks/face-detection', {
      headers: { ...withKey(key), prefer: 'wait=30' },
      body: { image_url: 'https://example.com/b.jpg' },
    });
    await waiters(1);
    const [id] = await api.deps.db.pool
      .query<{ public_id: string }>(`SELECT public_id FROM tasks WHERE account_id = $1 AND status = 0 ORDER BY created_at DESC LIMIT 1`, [account.id])
      .then((r) => r.rows.map((row) => row.public_id));
    await complete(id!);
    const res = await pending;
    expect(res.status).toBe(201);
    expect(res.body.public_id).toBe(id);
    expect(res.body.status).toBe(20);
    expect(res.headers.get('preference-applied')).toBe('wait=30');
    expect(res.headers.get('location')).toMatch(new RegExp(`/api/tasks/${id}$`));
  });

  it('a waiting request counts once against the rate limit', async () => {
    const id = await create();
    const remaining = (h: Headers) => Number(/"minute";r=(\d+)/.exec(h.get('ratelimit') ?? '')?.[1]);
    const first = await api.req('GET', `/api/tasks/${id}`, { headers: withKey(key) });
    const waited = await getWaiting(id, 'wait=1');
    const after = await api.req('GET', `/api/tasks/${id}`, { headers: withKey(key) });
    expect(waited.headers.get('preference-applied')).toBe('wait=1');
    expect(remaining(waited.headers)).toBe(remaining(first.headers) - 1);
    expect(remaining(after.headers)).toBe(remaining(first.headers) - 2);
  });

  it('ignores Prefer values it does not understand (RFC 7240) and caps wait at 60', async () => {
    const id = await create();
    for (const prefer of ['wait=abc', 'wait=0', 'wait=-5', 'respond-async', 'wait', '']) {
      const res = await getWaiting(id, prefer);
      expect(res.status).toBe(200);
      expect(res.headers.get('preference-applied')).toBeNull();
    }
    const pending = getWaiting(id, 'respond-async, wait=600');
    await waiters(1);
    await complete(id);
    const res = await pending;
    expect(res.body.status).toBe(20);
    expect(res.headers.get('preference-applied')).toBe('wait=60');
  });

  it('a task finished while the subscriber was reconnecting is answered once it is subscribed again', async () => {
    const finished = await create();
    const running = await create();
    const pendingFinished = getWaiting(finished, 'wait=30');
    const pendingRunning = getWaiting(running, 'wait=30');
    await waiters(2);
    // The event of this finish is published while the subscription is down: it is lost.
    const reconnected = new Promise((r) => api.deps.subscriber.once('ready', r));
    api.deps.subscriber.disconnect(true);
    await complete(finished);
    await reconnected;
    const res = await pendingFinished;
    expect(res.body.status).toBe(20);
    expect(res.headers.get('preference-applied')).toBe('wait=30');
    // The other one read its task again, found it running, and waits on.
    await waiters(1);
    await complete(running);
    const other = await pendingRunning;
    expect(other.body.status).toBe(20);
    expect(other.headers.get('preference-applied')).toBe('wait=30');
  });

  it('a creation whose wait fails after the commit still answers 201 with the created task', async () => {
    const reader = api.deps.taskReader;
    const readCurrent = reader.readCurrent.bind(reader);
    // A Redis or PostgreSQL failure during the wait, after the task was committed and charged.
    reader.readCurrent = async () => {
      throw new Error('connection lost');
    };
    try {
      const res = await api.req('POST', '/api/tasks/face-detection', { headers: { ...withKey(key), prefer: 'wait=5' }, body: { image_url: 'https://example.com/c.jpg' } });
      expect(res.status).toBe(201);
      expect(res.body.status).toBe(0);
      expect(res.headers.get('location')).toMatch(/\/api\/tasks\/task_/);
      expect(res.headers.get('preference-applied')).toBeNull();
    } finally {
      reader.readCurrent = readCurrent;
    }
  });

  it('a client that disconnects is no longer waited for', async () => {
    const id = await create();
    const abort = new AbortController();
    const pending = fetch(`${api.url}/api/tasks/${id}`, { headers: { ...withKey(key), prefer: 'wait=30' }, signal: abort.signal }).catch((err: Error) => err);
    await waiters(1);
    abort.abort();
    expect(((await pending) as Error).name).toBe('AbortError');
    await waiters(0);
  });
});

describe('Prefer: wait at shutdown', () => {
  it('draining releases waiting requests at once with the current state, and no new wait starts', async () => {
    const api = await startApi();
    try {
      const account = await seedAccount(api, { credits: 100 });
      const key = await createKey(api, account, { type: 'paid' });
      const id = (await api.req('POST', '/api/tasks/face-detection', { headers: withKey(key), body: { image_url: 'https://example.com/a.jpg' } })).body.public_id;
      const started = Date.now();
      const pending = api.req('GET', `/api/tasks/${id}`, { headers: { ...withKey(key), prefer: 'wait=60' } });
      await waitFor(() => api.deps.taskWaiters.size === 1);
      api.deps.taskWaiters.close();
      const res = await pending;
      expect(res.body.status).toBe(0);
      // Answered early, neither terminal nor after N seconds: the wait was not honoured.
      expect(res.headers.get('preference-applied')).toBeNull();
      expect(Date.now() - started).toBeLessThan(10_000);
      const later = await api.req('GET', `/api/tasks/${id}`, { headers: { ...withKey(key), prefer: 'wait=60' } });
      expect(later.body.status).toBe(0);
      expect(later.headers.get('preference-applied')).toBeNull();
    } finally {
      await api.close();
    }
  });
});

describe('Prefer header parsing (RFC 7240)', () => {
  it.each([
    ['wait=5', 5],
    ['WAIT = 7', 7],
    ['wait="9"', 9],
    ['respond-async, wait=10', 10],
    ['wait=12; foo=bar', 12],
    ['wait=600', 60],
    ['wait=99999999999999', 60],
    ['wait=abc, wait=5', undefined],
    ['wait=5, wait=30', 5],
    ['wait="5', undefined],
    ['wait=0', undefined],
    ['wait=-1', undefined],
    ['wait', undefined],
    ['waiting=5', undefined],
    ['', undefined],
  ])('%j → %j', (header, seconds) => {
    expect(preferredWaitSeconds(header)).toBe(seconds);
  });
});

describe('TaskWaiters limits', () => {
  it('holds at most N waits per account (others answer at once) and at most M in all', async () => {
    const subscriber = new Redis(TEST_REDIS_URL);
    const waiters = new TaskWaiters(5, 2);
    try {
      await waiters.listen(subscriber, createLogger({ service: 'test', level: 'silent' }));
      const a1 = waiters.register('acct_a', 'task_1', 60_000);
      const a2 = waiters.register('acct_a', 'task_2', 60_000);
      expect(a1).not.toBeNull();
      expect(a2).not.toBeNull();
      expect(waiters.register('acct_a', 'task_3', 60_000)).toBeNull();
      a1!.end();
      expect(waiters.register('acct_a', 'task_3', 60_000)).not.toBeNull();
      expect(waiters.register('acct_b', 'task_4', 60_000)).not.toBeNull();
      expect(waiters.register('acct_c', 'task_5', 60_000)).not.toBeNull();
      expect(waiters.register('acct_d', 'task_6', 60_000)).not.toBeNull();
      expect(waiters.size).toBe(5);
      expect(waiters.register('acct_e', 'task_7', 60_000)).toBeNull();
      waiters.close();
      expect(waiters.size).toBe(0);
      expect(await a2!.woken).toBe('released');
    } finally {
      waiters.close();
      subscriber.disconnect();
    }
  });
});
