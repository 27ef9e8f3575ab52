import { TaskStatus, taskStatusMarkerKey } from '@taskapi/domain';
import { TaskRows, StatusMarkers } from '@taskapi/task-lifecycle';
import { newId } from '@taskapi/ids';
import { waitFor } from '@taskapi/testing';
import { createKey, seedAccount, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from './support/harness';

describe('task reads are never stale once a change is reported (in-process cache + status marker)', () => {
  let a: TestApi;
  let b: TestApi;
  let account: TestAccount;
  let key: CreatedKey;
  beforeAll(async () => {
    [a, b] = await Promise.all([startApi(), startApi()]);
    account = await seedAccount(a, { credits: 1_000 });
    key = await createKey(a, account, { type: 'paid' });
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
  });

  const create = async () => (await a.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'p' } })).body.public_id as string;
  const status = async (api: TestApi, id: string) => (await api.req('GET', `/api/tasks/${id}`, { headers: withKey(key) })).body.status;

  it('a cancel through one replica is visible on the other on the very next read', async () => {
    const id = await create();
    expect(await status(b, id)).toBe(0);
    expect(await status(b, id)).toBe(0);
    expect((await a.req('POST', `/api/tasks/${id}/cancel`, { headers: withKey(key) })).status).toBe(200);
    expect(await status(b, id)).toBe(40);
  });

  it('a transition recorded by another process (the worker) is visible on the next read', async () => {
    const id = await create();
    expect(await status(a, id)).toBe(0);
    await a.deps.taskLifecycle.repair.end(id, { status: TaskStatus.completed, result: { ok: 1 } });
    const res = await a.req('GET', `/api/tasks/${id}`, { headers: withKey(key) });
    expect(res.body).toMatchObject({ status: 20, result: { ok: 1 } });
  });

  it('a missing marker (Redis lost its data) means a database read, never a stale row', async () => {
    const id = await create();
    expect(await status(a, id)).toBe(0);
    // The first read seeded the marker.
    expect(await a.deps.redis.get(taskStatusMarkerKey(account.id, id))).toBe('0');
    // A transition whose marker update never happened, then the marker vanishes.
    await new TaskRows(a.deps.db.pool).finish(id, null, { status: TaskStatus.failed, errorCode: 'engine_error' }, newId('delivery'));
    await a.deps.redis.del(taskStatusMarkerKey(account.id, id));
    expect(await status(a, id)).toBe(30);
  });

  it('markers never move backwards', async () => {
    const id = await create();
    await new StatusMarkers(a.deps.redis).status(account.id, id, 40);
    await new StatusMarkers(a.deps.redis).status(account.id, id, 10);
    expect(await a.deps.redis.get(taskStatusMarkerKey(account.id, id))).toBe('40');
  });

  it('a cached row is never shown to another account', async () => {
    const id = await create();
    expect(await status(a, id)).toBe(0);
    const stranger = await seedAccount(a);
    const strangerKey = await createKey(a, stranger, { type: 'paid' });
    const res = await a.req('GET', `/api/tasks/${id}`, { headers: withKey(strangerKey) });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ message: 'Task not found.' });
  });

  it('a row whose writer died before updating the marker is re-read within the cache\'s max age', async () => {
    const id = await create();
    expect(await status(a, id)).toBe(0);
    await new TaskRows(a.deps.db.pool).finish(id, null, { status: TaskStatus.failed, errorCode: 'timeout' }, newId('delivery'));
    // The marker still says 0, so the cached row may be served for a few seconds, no longer.
    await waitFor(async () => (await status(a, id)) === 30, { timeoutMs: 7_000, intervalMs: 250, what: 'the cached row to expire' });
  });
});
