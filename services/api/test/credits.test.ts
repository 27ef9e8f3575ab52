import { TaskStatus } from '@taskapi/domain';
import { TaskRows } from '@taskapi/task-lifecycle';
import { newId } from '@taskapi/ids';
import { createKey, seedAccount, seedGrant, startApi, withKey, type TestAccount, type TestApi } from './support/harness';

/** Sum of every ledger movement of an account (top-ups, charges, refunds on the paid balance). */
async function paidLedgerSum(api: TestApi, account: TestAccount): Promise<number> {
  const { _sum } = await api.deps.db.prisma.creditLedgerEntry.aggregate({ where: { accountId: account.id, grantId: null }, _sum: { amount: true } });
  return _sum.amount ?? 0;
}

describe('credits under concurrency', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startApi();
  });
  afterAll(async () => {
    await api.close();
  });

  it('200 concurrent creations against a balance that covers 57: exactly 57 accepted, balance 0, ledger balanced', async () => {
    const account = await seedAccount(api, { credits: 57 * 2 });
    const key = await createKey(api, account, { type: 'paid' });
    const results = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: `race ${i}` } }),
      ),
    );
    const statuses = results.map((r) => r.status);
    expect(statuses.filter((s) => s === 201)).toHaveLength(57);
    expect(statuses.filter((s) => s === 402)).toHaveLength(143);
    for (const r of results.filter((x) => x.status === 402)) {
      expect(r.body).toEqual({ message: 'Insufficient credits.', required: 2, available: expect.any(Number) });
      expect(r.body.available).toBeLessThan(2);
    }

    const acct = await api.deps.db.prisma.account.findUniqueOrThrow({ where: { id: account.id } });
    expect(acct.paidBalance).toBe(0);
    expect(await paidLedgerSum(api, account)).toBe(0);
    expect(await api.deps.db.prisma.task.count({ where: { accountId: account.id } })).toBe(57);
    expect(await api.deps.db.prisma.creditLedgerEntry.count({ where: { accountId: account.id, entryType: 'charge' } })).toBe(57);
  });

  it('a trial grant is never overdrawn either', async () => {
    const account = await seedAccount(api);
    const grant = await seedGrant(api, account, 13);
    const key = await createKey(api, account, { type: 'trial', grant_id: grant });
    // Trial keys allow 20 requests a minute: 20 concurrent creations of cost 1 against a quota of 13.
    const results = await Promise.all(
      Array.from({ length: 20 }, () =>
        api.req('POST', '/api/tasks/face-detection', { headers: withKey(key), body: { image_url: 'https://img.example/a.jpg' } }),
      ),
    );
    expect(results.filter((r) => r.status === 201)).toHaveLength(13);
    expect(results.filter((r) => r.status === 402)).toHaveLength(7);
    const g = await api.deps.db.prisma.trialGrant.findUniqueOrThrow({ where: { id: grant } });
    expect(g.quotaRemaining).toBe(0);
    const { _sum } = await api.deps.db.prisma.creditLedgerEntry.aggregate({ where: { grantId: grant }, _sum: { amount: true } });
    expect(_sum.amount).toBe(0);
  });

  it('a task reaches a terminal state once: failure racing cancellation refunds exactly once', async () => {
    const account = await seedAccount(api, { credits: 100 });
    const key = await createKey(api, account, { type: 'paid' });
    const created = await Promise.all(
      Array.from({ length: 10 }, () => api.req('POST', '/api/tasks/video-generation', { headers: withKey(key), body: { prompt: 'p', callback_url: 'https://h.example/x' } })),
    );
    expect((await api.deps.db.prisma.account.findUniqueOrThrow({ where: { id: account.id } })).paidBalance).toBe(0);

    const outcomes = await Promise.all(
      created.flatMap((c) => [
        new TaskRows(api.deps.db.pool).finish(c.body.public_id, null, { status: TaskStatus.failed, errorCode: 'engine_error' }, newId('delivery')),
        new TaskRows(api.deps.db.pool).finish(c.body.public_id, account.id, { status: TaskStatus.cancelled }, newId('delivery')),
        new TaskRows(api.deps.db.pool).finish(c.body.public_id, null, { status: TaskStatus.completed, result: { ok: true } }, newId('delivery')),
      ]),
    );
    // Exactly one transition per task won.
    expect(outcomes.filter((o) => o !== null)).toHaveLength(10);

    const tasks = await api.deps.db.prisma.task.findMany({ where: { accountId: account.id }, include: { deliveries: true } });
    const refunded = tasks.filter((t) => t.status === 30 || t.status === 40).length;
    expect((await api.deps.db.prisma.account.findUniqueOrThrow({ where: { id: account.id } })).paidBalance).toBe(refunded * 10);
    expect(await paidLedgerSum(api, account)).toBe(refunded * 10);
    for (const t of tasks) {
      // Webhook outbox rows for completed and failed tasks with a callback_url, never for cancelled ones.
      expect(t.deliveries).toHaveLength(t.status === 40 ? 0 : 1);
      if (t.deliveries[0]) expect(t.deliveries[0].taskStatus).toBe(t.status);
    }
  });

  it('a refund can never be written twice for one task (unique per task)', async () => {
    const account = await seedAccount(api, { credits: 10 });
    const key = await createKey(api, account, { type: 'paid' });
    const created = await api.req('POST', '/api/tasks/video-generation', { headers: withKey(key), body: { prompt: 'p' } });
    await new TaskRows(api.deps.db.pool).finish(created.body.public_id, null, { status: TaskStatus.failed, errorCode: 'timeout' }, newId('delivery'));
    const task = await api.deps.db.prisma.task.findUniqueOrThrow({ where: { publicId: created.body.public_id } });
    await expect(
      api.deps.db.prisma.creditLedgerEntry.create({ data: { accountId: account.id, taskId: task.id, entryType: 'refund', amount: 10 } }),
    ).rejects.toThrow();
    expect((await api.deps.db.prisma.account.findUniqueOrThrow({ where: { id: account.id } })).paidBalance).toBe(10);
  });

  it('a batch is decided in order, exactly as one request after another', async () => {
    const account = await seedAccount(api, { credits: 11 });
    const key = await createKey(api, account, { type: 'paid' });
    const ids = [newId('task'), newId('task'), newId('task'), newId('task')];
    const { rows } = await api.deps.db.pool.query(
      `SELECT * FROM create_tasks($1, NULL, $2::text[], $3::text[], $4::task_kind[], $5::json[], $6::json[], $7::text[], $8::int[], $9::text[], $10::bytea[])`,
      [
        account.id,
        ids,
        ids.map(() => key.id),
        ['video-generation', 'image-generation', 'face-detection', 'face-detection'],
        ids.map(() => '{"prompt":"p"}'),
        [null, '{"n": 1}', null, null],
        ids.map(() => null),
        [10, 2, 1, 1],
        ids.map(() => null),
        ids.map(() => null),
      ],
    );
    // 11 credits: the video (10) fits, the image (2) does not, the first face (1) does, the second does not.
    expect(rows.map((r) => [r.ordinal, r.task_id !== null, r.available])).toEqual([
      [1, true, 1],
      [2, false, 1],
      [3, true, 0],
      [4, false, 0],
    ]);
    expect((await api.deps.db.prisma.account.findUniqueOrThrow({ where: { id: account.id } })).paidBalance).toBe(0);
    const tasks = await api.deps.db.prisma.task.findMany({ where: { accountId: account.id }, orderBy: { id: 'asc' } });
    expect(tasks.map((t) => t.publicId)).toEqual([ids[0], ids[2]]);
    expect(await paidLedgerSum(api, account)).toBe(0);
  });

  it('one request that the database refuses does not fail the others batched with it', async () => {
    const account = await seedAccount(api, { credits: 100 });
    const key = await createKey(api, account, { type: 'paid' });
    const principal = { keyId: key.id, accountId: account.id, type: 'paid' as const, grantId: null, keyPrefix: key.prefix, apiVersion: '2026-11-01' };
    const draft = (payloadText: string | null) => ({ kind: 'face-detection' as const, input: { image_url: 'https://img.example/a.png' }, payloadText, callbackUrl: null, upload: null, priority: null, ttlSeconds: null, fairnessKey: null });
    // Not valid JSON: impossible through HTTP validation, so it stands in for any statement failure.
    const results = await Promise.allSettled(
      [...Array(5).fill('{"ok":1}'), '{not json', ...Array(5).fill('{"ok":2}')].map((p: string) => api.deps.taskCreator.create(principal, draft(p), 1)),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(10);
    expect(results.filter((r) => r.status === 'rejected')).toHaveLength(1);
    expect((await api.deps.db.prisma.account.findUniqueOrThrow({ where: { id: account.id } })).paidBalance).toBe(90);
    expect(await paidLedgerSum(api, account)).toBe(90);
  });

  it('the database refuses a negative balance outright', async () => {
    const account = await seedAccount(api, { credits: 1 });
    await expect(api.deps.db.pool.query('UPDATE accounts SET paid_balance = paid_balance - 2 WHERE id = $1', [account.id])).rejects.toThrow(
      /accounts_paid_balance_non_negative/,
    );
  });
});
