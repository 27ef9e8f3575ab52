// Spend limits per key (docs/api.md, "Spend limits"): set on creation and by PATCH, shown with
// `spent` in the key list, enforced in the transaction that charges (exact under concurrency and
// across replicas), lowered by refunds in the period of their charge, carried over by reissue.
import { TaskStatus } from '@taskapi/domain';
import { TaskRows } from '@taskapi/task-lifecycle';
import { newId } from '@taskapi/ids';
import { createKey, seedAccount, seedGrant, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from './support/harness';

const FACE = { image_url: 'https://img.example/a.jpg' };
const LIMIT_MESSAGE = "This key's spend limit is reached.";

/** The key as the key list shows it. */
async function listed(api: TestApi, account: TestAccount, keyId: string): Promise<{ spend_limit: unknown; spent: number; status: string }> {
  const res = await api.req('GET', '/api/keys', { headers: account.auth });
  expect(res.status).toBe(200);
  const row = (res.body.data as Array<{ id: string; spend_limit: unknown; spent: number; status: string }>).find((k) => k.id === keyId);
  if (!row) throw new Error(`key ${keyId} not listed`);
  return row;
}

/** Sum of the charge and refund ledger rows of the account's tasks created through `key`. */
async function ledgerOfKey(api: TestApi, key: CreatedKey): Promise<number> {
  const rows = await api.deps.db.pool.query<{ sum: string | null }>(
    `SELECT sum(l.amount)::text AS sum FROM credit_ledger l JOIN tasks t ON t.id = l.task_id WHERE t.api_key_id = $1`,
    [key.id],
  );
  return 0 - Number(rows.rows[0]?.sum ?? 0);
}

describe('spend limits per key', () => {
  let api: TestApi;
  /** A second replica: its own key cache, rate limiter and pool, the same database and Redis. */
  let replica: TestApi;
  beforeAll(async () => {
    [api, replica] = await Promise.all([startApi(), startApi()]);
  });
  afterAll(async () => {
    await Promise.all([api.close(), replica.close()]);
  });

  describe('bad input names the field', () => {
    let account: TestAccount;
    let key: CreatedKey;
    beforeAll(async () => {
      account = await seedAccount(api);
      key = await createKey(api, account, { type: 'paid' });
    });

    const bad: Array<[string, unknown, string]> = [
      ['negative credits', { credits: -5, period: 'day' }, 'spend_limit.credits'],
      ['zero credits', { credits: 0, period: 'day' }, 'spend_limit.credits'],
      ['absurdly large credits', { credits: 1e15, period: 'month' }, 'spend_limit.credits'],
      ['credits above 1,000,000,000', { credits: 1_000_000_001, period: 'month' }, 'spend_limit.credits'],
      ['fractional credits', { credits: 10.5, period: 'day' }, 'spend_limit.credits'],
      ['credits as a string', { credits: '10', period: 'day' }, 'spend_limit.credits'],
      ['an unknown period', { credits: 10, period: 'week' }, 'spend_limit.period'],
      ['no period', { credits: 10 }, 'spend_limit.period'],
      ['an unknown member', { credits: 10, period: 'day', hard: true }, 'spend_limit.hard'],
      ['not an object', 10, 'spend_limit'],
    ];

    it.each(bad)('creation: %s → 400', async (_name, spendLimit, field) => {
      const res = await api.req('POST', '/api/keys', { headers: account.auth, body: { type: 'paid', spend_limit: spendLimit } });
      expect(res.status).toBe(400);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
      expect(res.body.message).toMatch(new RegExp(`^${field.replace('.', '\\.')} `));
    });

    it.each(bad)('PATCH: %s → 400, the limit unchanged', async (_name, spendLimit, field) => {
      const res = await api.req('PATCH', `/api/keys/${key.id}`, { headers: account.auth, body: { spend_limit: spendLimit } });
      expect(res.status).toBe(400);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
      expect((await listed(api, account, key.id)).spend_limit).toBeNull();
    });

    it('PATCH without spend_limit, of an unknown key, of another account\'s key, of a revoked key', async () => {
      const missing = await api.req('PATCH', `/api/keys/${key.id}`, { headers: account.auth, body: {} });
      expect(missing.status).toBe(400);
      expect(missing.body.errors).toEqual([{ field: 'spend_limit', message: 'spend_limit is required' }]);

      const limit = { spend_limit: { credits: 10, period: 'day' } };
      expect((await api.req('PATCH', `/api/keys/${newId('key')}`, { headers: account.auth, body: limit })).body).toEqual({ message: 'API key not found.' });
      const other = await seedAccount(api);
      const foreign = await api.req('PATCH', `/api/keys/${key.id}`, { headers: other.auth, body: limit });
      expect(foreign.status).toBe(404);

      const doomed = await createKey(api, account, { type: 'paid' });
      expect((await api.req('POST', `/api/keys/${doomed.id}/revoke`, { headers: account.auth })).status).toBe(200);
      const revoked = await api.req('PATCH', `/api/keys/${doomed.id}`, { headers: account.auth, body: limit });
      expect(revoked.status).toBe(409);
      expect(revoked.body).toEqual({ message: 'This key is revoked; its spend limit cannot be changed.' });
    });

    it('PATCH refuses an API key (session only)', async () => {
      const res = await api.req('PATCH', `/api/keys/${key.id}`, { headers: withKey(key), body: { spend_limit: null } });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'This endpoint requires a login session. API keys are not accepted.' });
    });
  });

  it('creation with a limit; the list shows it and what was spent; the 402 once the next task would pass it', async () => {
    const account = await seedAccount(api, { credits: 1000 });
    const created = await api.req('POST', '/api/keys', { headers: account.auth, body: { type: 'paid', spend_limit: { credits: 5, period: 'day' } } });
    expect(created.status).toBe(201);
    expect(created.body.key).toMatchObject({ spend_limit: { credits: 5, period: 'day' }, spent: 0 });
    const key: CreatedKey = { id: created.body.key.id, plaintext: created.body.plaintext_key, prefix: created.body.key.key_prefix };

    for (let i = 0; i < 2; i++) expect((await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: `p${i}` } })).status).toBe(201);
    expect(await listed(api, account, key.id)).toMatchObject({ spend_limit: { credits: 5, period: 'day' }, spent: 4 });

    const refused = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'one too many' } });
    expect(refused.status).toBe(402);
    expect(refused.body).toEqual({ message: LIMIT_MESSAGE, limit: 5, period: 'day', spent: 4 });
    // A cheaper task still fits.
    expect((await api.req('POST', '/api/tasks/face-detection', { headers: withKey(key), body: FACE })).status).toBe(201);
    expect((await listed(api, account, key.id)).spent).toBe(5);
    expect((await api.req('POST', '/api/tasks/face-detection', { headers: withKey(key), body: FACE })).body).toEqual({ message: LIMIT_MESSAGE, limit: 5, period: 'day', spent: 5 });

    // Nothing was charged for the refusals.
    const acct = await api.deps.db.prisma.account.findUniqueOrThrow({ where: { id: account.id } });
    expect(acct.paidBalance).toBe(995);
    expect(await ledgerOfKey(api, key)).toBe(5);
  });

  it('the spend-limit 402 wins when the credits fall short too', async () => {
    const account = await seedAccount(api, { credits: 1 });
    const key = await createKey(api, account, { type: 'paid', spend_limit: { credits: 1, period: 'month' } });
    const res = await api.req('POST', '/api/tasks/video-generation', { headers: withKey(key), body: { prompt: 'too dear twice over' } });
    expect(res.status).toBe(402);
    expect(res.body).toEqual({ message: LIMIT_MESSAGE, limit: 1, period: 'month', spent: 0 });
  });

  it('keys without a limit show the month\'s spend; the limit of one key does not touch another', async () => {
    const account = await seedAccount(api, { credits: 100 });
    const free = await createKey(api, account, { type: 'paid' });
    const tight = await createKey(api, account, { type: 'paid', spend_limit: { credits: 1, period: 'day' } });
    expect((await api.req('POST', '/api/tasks/image-generation', { headers: withKey(free), body: { prompt: 'a' } })).status).toBe(201);
    expect((await api.req('POST', '/api/tasks/image-generation', { headers: withKey(tight), body: { prompt: 'b' } })).status).toBe(402);
    expect(await listed(api, account, free.id)).toMatchObject({ spend_limit: null, spent: 2 });
    expect(await listed(api, account, tight.id)).toMatchObject({ spent: 0 });
  });

  it('PATCH sets, lowers and clears a limit, and each change holds on the very next creation on another replica', async () => {
    const account = await seedAccount(api, { credits: 1000 });
    const key = await createKey(api, account, { type: 'paid' });
    // The replica has the key in its cache from here on.
    expect((await replica.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'warm' } })).status).toBe(201);

    const set = await api.req('PATCH', `/api/keys/${key.id}`, { headers: account.auth, body: { spend_limit: { credits: 3, period: 'day' } } });
    expect(set.status).toBe(200);
    expect(set.body).toMatchObject({ id: key.id, spend_limit: { credits: 3, period: 'day' }, spent: 2 });
    expect((await replica.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'over' } })).body).toEqual({
      message: LIMIT_MESSAGE,
      limit: 3,
      period: 'day',
      spent: 2,
    });

    const cleared = await api.req('PATCH', `/api/keys/${key.id}`, { headers: account.auth, body: { spend_limit: null } });
    expect(cleared.body).toMatchObject({ spend_limit: null, spent: 2 });
    expect((await replica.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'free again' } })).status).toBe(201);

    // A limit below what was already spent refuses everything until the period ends.
    await api.req('PATCH', `/api/keys/${key.id}`, { headers: account.auth, body: { spend_limit: { credits: 1, period: 'month' } } });
    expect((await replica.req('POST', '/api/tasks/face-detection', { headers: withKey(key), body: FACE })).body).toEqual({ message: LIMIT_MESSAGE, limit: 1, period: 'month', spent: 4 });
  });

  it('200 concurrent creations on two replicas against a limit of 57 credits: exactly the affordable ones succeed, the ledger exact', async () => {
    const account = await seedAccount(api, { credits: 10_000 });
    const key = await createKey(api, account, { type: 'paid', spend_limit: { credits: 57, period: 'day' } });
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => (i % 2 ? replica : api).req('POST', '/api/tasks/face-detection', { headers: withKey(key), body: FACE })),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(57);
    expect(statuses.filter((s) => s === 402)).toHaveLength(143);
    for (const r of results.filter((x) => x.status === 402)) expect(r.body).toEqual({ message: LIMIT_MESSAGE, limit: 57, period: 'day', spent: 57 });

    expect((await listed(api, account, key.id)).spent).toBe(57);
    expect(await ledgerOfKey(api, key)).toBe(57);
    expect(await api.deps.db.prisma.task.count({ where: { apiKeyId: key.id } })).toBe(57);
    const acct = await api.deps.db.prisma.account.findUniqueOrThrow({ where: { id: account.id } });
    expect(acct.paidBalance).toBe(10_000 - 57);
  });

  it('the same race with tasks of 2 credits: 28 succeed, spent 56 (the largest affordable sum)', async () => {
    const account = await seedAccount(api, { credits: 10_000 });
    const key = await createKey(api, account, { type: 'paid', spend_limit: { credits: 57, period: 'month' } });
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) => (i % 2 ? replica : api).req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: `r${i}` } })),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(28);
    expect(results.filter((r) => r.status === 402)).toHaveLength(172);
    expect((await listed(api, account, key.id)).spent).toBe(56);
    expect(await ledgerOfKey(api, key)).toBe(56);
  });

  it('a trial key\'s limit holds against its grant too', async () => {
    const account = await seedAccount(api);
    const grant = await seedGrant(api, account, 100);
    const key = await createKey(api, account, { type: 'trial', grant_id: grant, spend_limit: { credits: 3, period: 'day' } });
    const results = await Promise.all(Array.from({ length: 10 }, () => api.req('POST', '/api/tasks/face-detection', { headers: withKey(key), body: FACE })));
    expect(results.filter((r) => r.status === 201)).toHaveLength(3);
    const g = await api.deps.db.prisma.trialGrant.findUniqueOrThrow({ where: { id: grant } });
    expect(g.quotaRemaining).toBe(97);
  });

  it('a refund lowers spent: a cancellation and a failure give the credits back to the limit', async () => {
    const account = await seedAccount(api, { credits: 100 });
    const key = await createKey(api, account, { type: 'paid', spend_limit: { credits: 4, period: 'day' } });
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: `t${i}` } });
      expect(res.status).toBe(201);
      ids.push(res.body.public_id);
    }
    expect((await api.req('POST', '/api/tasks/face-detection', { headers: withKey(key), body: FACE })).status).toBe(402);

    expect((await api.req('POST', `/api/tasks/${ids[0]}/cancel`, { headers: withKey(key) })).status).toBe(200);
    expect((await listed(api, account, key.id)).spent).toBe(2);
    // A failed task is refunded by the worker's terminal transition: the same statement.
    expect(await new TaskRows(api.deps.db.pool).finish(ids[1]!, account.id, { status: TaskStatus.failed, errorCode: 'engine_error' }, newId('delivery'))).not.toBeNull();
    expect((await listed(api, account, key.id)).spent).toBe(0);
    expect(await ledgerOfKey(api, key)).toBe(0);
    // The limit's room is back.
    for (let i = 0; i < 2; i++) expect((await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: `again ${i}` } })).status).toBe(201);
  });

  it('a refund is deducted from the period of its charge: a task charged yesterday and refunded today leaves today\'s spend alone', async () => {
    const account = await seedAccount(api, { credits: 100 });
    const key = await createKey(api, account, { type: 'paid', spend_limit: { credits: 5, period: 'day' } });
    const old = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'charged yesterday' } });
    expect(old.status).toBe(201);
    // The clock cannot be moved: the task and its charge are moved to yesterday (UTC) instead.
    await api.deps.db.pool.query(`UPDATE tasks SET created_at = created_at - interval '1 day' WHERE public_id = $1`, [old.body.public_id]);
    await api.deps.db.pool.query(`UPDATE api_key_spend SET day = day - 1 WHERE key_id = $1`, [key.id]);
    expect((await listed(api, account, key.id)).spent).toBe(0);
    expect((await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'today' } })).status).toBe(201);
    expect((await listed(api, account, key.id)).spent).toBe(2);

    expect((await api.req('POST', `/api/tasks/${old.body.public_id}/cancel`, { headers: withKey(key) })).status).toBe(200);
    // Today's spend is what today's charges were; yesterday's went back to 0.
    expect((await listed(api, account, key.id)).spent).toBe(2);
    const days = await api.deps.db.pool.query<{ spent: string; yesterday: boolean }>(
      `SELECT spent::text, day < (now() AT TIME ZONE 'UTC')::date AS yesterday FROM api_key_spend WHERE key_id = $1 ORDER BY day`,
      [key.id],
    );
    expect(days.rows).toEqual([
      { spent: '0', yesterday: true },
      { spent: '2', yesterday: false },
    ]);
  });

  it('reissue carries the limit and the period\'s spend over to the new key; refunds of the old key\'s tasks count for the new one', async () => {
    const account = await seedAccount(api, { credits: 100 });
    const key = await createKey(api, account, { type: 'paid', spend_limit: { credits: 10, period: 'day' } });
    const first: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await api.req('POST', '/api/tasks/face-detection', { headers: withKey(key), body: FACE });
      expect(res.status).toBe(201);
      first.push(res.body.public_id);
    }
    const reissued = await api.req('POST', `/api/keys/${key.id}/reissue`, { headers: account.auth });
    expect(reissued.status).toBe(201);
    expect(reissued.body.key).toMatchObject({ spend_limit: { credits: 10, period: 'day' }, spent: 6 });
    const next: CreatedKey = { id: reissued.body.key.id, plaintext: reissued.body.plaintext_key, prefix: reissued.body.key.key_prefix };

    const results = [];
    for (let i = 0; i < 5; i++) results.push(await api.req('POST', '/api/tasks/face-detection', { headers: withKey(next), body: FACE }));
    expect(results.map((r) => r.status)).toEqual([201, 201, 201, 201, 402]);
    expect(results[4]!.body).toEqual({ message: LIMIT_MESSAGE, limit: 10, period: 'day', spent: 10 });

    // The old key's task, cancelled (with the new key: tasks belong to the account), frees room for the new key.
    expect((await api.req('POST', `/api/tasks/${first[0]}/cancel`, { headers: withKey(next) })).status).toBe(200);
    expect(await listed(api, account, next.id)).toMatchObject({ spent: 9 });
    expect((await api.req('POST', '/api/tasks/face-detection', { headers: withKey(next), body: FACE })).status).toBe(201);
    expect((await api.req('POST', '/api/tasks/face-detection', { headers: withKey(next), body: FACE })).status).toBe(402);
  });
});
