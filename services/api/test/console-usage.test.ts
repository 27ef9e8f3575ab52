// GET /api/console/usage: the dashboard's per-day usage report, against a real database. Tasks are
// created through the API (so charges and refunds land in the ledger as in production), ended the
// way the worker and the cancel endpoint end them, then moved back in time. In a database of its
// own: queued tasks days old would otherwise be picked up by other test files' sweepers.
import { recreateDatabase, testDatabaseUrl } from '@taskapi/testing';
import { API_ERRORS } from '../src/errors';
import { USAGE } from '../src/repositories/tasks';
import { usageReportSchema } from '../src/schemas/usage';
import { createKey, seedAccount, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from './support/harness';
import { isoDay, seedUsageTask, type UsageEnd, type UsageKind } from './support/usage-tasks';

const DAY_MS = 86_400_000;
const DATABASE_URL = testDatabaseUrl('console_usage');
type Kind = UsageKind;

describe('GET /api/console/usage', () => {
  let api: TestApi;
  let owner: TestAccount;
  let other: TestAccount;
  let key: CreatedKey;
  const cost: Partial<Record<Kind, number>> = {};

  /** Creates a task, ends it as asked, and moves its creation `daysAgo` days back (at 00:30 UTC that day). */
  async function seedTask(kind: Kind, end: UsageEnd, daysAgo: number): Promise<string> {
    const seeded = await seedUsageTask(api, owner, key, kind, end, new Date(`${isoDay(daysAgo)}T00:30:00Z`));
    cost[kind] = seeded.cost;
    return seeded.publicId;
  }

  const usage = (query = '', who: TestAccount = owner) => api.req('GET', `/api/console/usage${query}`, { headers: who.auth });

  beforeAll(async () => {
    await recreateDatabase(DATABASE_URL);
    api = await startApi({ DATABASE_URL });
    owner = await seedAccount(api, { credits: 1000, label: 'usage' });
    other = await seedAccount(api, { credits: 100, label: 'usage-other' });
    key = await createKey(api, owner, { type: 'paid' });
    // Today: 2 image (1 completed, 1 failed), 1 video queued, 1 face cancelled.
    await seedTask('image-generation', 'completed', 0);
    await seedTask('image-generation', 'failed', 0);
    await seedTask('video-generation', 'queued', 0);
    await seedTask('face-detection', 'cancelled', 0);
    // Two days ago: 3 completed face detections and 1 failed video.
    for (let i = 0; i < 3; i++) await seedTask('face-detection', 'completed', 2);
    await seedTask('video-generation', 'failed', 2);
    // The first day of a 30-day window, and the day before it.
    await seedTask('image-generation', 'completed', 29);
    await seedTask('video-generation', 'completed', 30);
  });
  afterAll(async () => {
    await api.close();
  });

  it('covers 30 UTC days by default, oldest first, every day present (zeros when idle), in the documented shape', async () => {
    const res = await usage();
    expect(res.status).toBe(200);
    expect(usageReportSchema.safeParse(res.body).error).toBeUndefined();
    const report = res.body;
    expect({ days: report.days, from: report.from, to: report.to }).toEqual({ days: 30, from: isoDay(29), to: isoDay(0) });
    expect(report.data.map((d: { date: string }) => d.date)).toEqual(Array.from({ length: 30 }, (_, i) => isoDay(29 - i)));
    const idle = report.data.find((d: { date: string }) => d.date === isoDay(1));
    expect(idle).toEqual({
      date: isoDay(1),
      created: 0,
      by_kind: { 'video-generation': 0, 'image-generation': 0, 'face-detection': 0 },
      completed: 0,
      failed: 0,
      cancelled: 0,
      in_progress: 0,
      credits_spent: 0,
      failure_rate: null,
    });
  });

  it('counts tasks per day by kind and by what became of them; credits are net of refunds; failure rate is failed of finished', async () => {
    const { body: report } = await usage();
    const day = (daysAgo: number) => report.data.find((d: { date: string }) => d.date === isoDay(daysAgo));
    expect(day(0)).toEqual({
      date: isoDay(0),
      created: 4,
      by_kind: { 'video-generation': 1, 'image-generation': 2, 'face-detection': 1 },
      completed: 1,
      failed: 1,
      cancelled: 1,
      in_progress: 1,
      // The completed image and the queued video; the failed image and cancelled face were refunded.
      credits_spent: cost['image-generation']! + cost['video-generation']!,
      failure_rate: 0.5,
    });
    expect(day(2)).toMatchObject({ created: 4, completed: 3, failed: 1, credits_spent: 3 * cost['face-detection']!, failure_rate: 0.25 });
    expect(day(29)).toMatchObject({ created: 1, by_kind: { 'video-generation': 0, 'image-generation': 1, 'face-detection': 0 }, failure_rate: 0 });
    expect(report.totals).toEqual({
      created: 9,
      by_kind: { 'video-generation': 2, 'image-generation': 3, 'face-detection': 4 },
      completed: 5,
      failed: 2,
      cancelled: 1,
      in_progress: 1,
      credits_spent: 2 * cost['image-generation']! + cost['video-generation']! + 3 * cost['face-detection']!,
      failure_rate: Math.round((2 / 7) * 10_000) / 10_000,
    });

    // The same money the ledger shows for these tasks: charges less refunds.
    const { rows } = await api.deps.db.pool.query<{ net: string }>(
      `SELECT COALESCE(-sum(l.amount), 0)::text AS net FROM credit_ledger l JOIN tasks t ON t.id = l.task_id
        WHERE t.account_id = $1 AND t.created_at >= $2`,
      [owner.id, `${isoDay(29)}T00:00:00Z`],
    );
    expect(Number(rows[0]!.net)).toBe(report.totals.credits_spent);
  });

  it('?days narrows or widens the window: 1 is today, 7 leaves out older days, 31 reaches the day before', async () => {
    const today = (await usage('?days=1')).body;
    expect({ from: today.from, to: today.to, days: today.data.length, created: today.totals.created }).toEqual({ from: isoDay(0), to: isoDay(0), days: 1, created: 4 });
    const week = (await usage('?days=7')).body;
    expect({ days: week.data.length, created: week.totals.created }).toEqual({ days: 7, created: 8 });
    const longer = (await usage('?days=31')).body;
    expect({ days: longer.data.length, created: longer.totals.created, first: longer.data[0].created }).toEqual({ days: 31, created: 10, first: 1 });
    expect((await usage('?days=90')).body.data).toHaveLength(90);
  });

  it("an account sees only its own tasks: another account's report is all zeros", async () => {
    const res = await usage('', other);
    expect(res.status).toBe(200);
    expect(res.body.totals).toMatchObject({ created: 0, credits_spent: 0, failure_rate: null });
    expect(res.body.data.every((d: { created: number }) => d.created === 0)).toBe(true);
  });

  it('needs a login session: none is 401, an API key is refused', async () => {
    const none = await api.req('GET', '/api/console/usage');
    expect({ status: none.status, message: none.body.message }).toEqual({ status: 401, message: expect.any(String) });
    const viaKey = await api.req('GET', '/api/console/usage', { headers: withKey(key) });
    expect({ status: viaKey.status, body: viaKey.body }).toEqual({ status: 401, body: { message: API_ERRORS.SESSION_ONLY.message } });
  });

  it('refuses a bad days with 400 and says what is allowed', async () => {
    for (const query of ['?days=0', '?days=91', '?days=abc', '?days=1.5', '?days=-1', '?days=', '?days=1&days=2', '?day=7', '?days=0030']) {
      const res = await usage(query);
      expect({ query, status: res.status, message: typeof res.body?.message }).toEqual({ query, status: 400, message: 'string' });
      if (query.startsWith('?days=') && !query.includes('&')) expect({ query, message: res.body.message }).toEqual({ query, message: 'days must be an integer from 1 to 90.' });
    }
  });

  it('is an index-only scan of tasks_usage_by_key_idx bounded by account and days (no table visits, no sort of the table)', async () => {
    const client = await api.deps.db.pool.connect();
    try {
      await client.query('BEGIN');
      // A test database is too small for the planner to prefer any index; take the table scans away
      // so the plan shows which index serves the query and how.
      await client.query('SET LOCAL enable_seqscan = off');
      await client.query('SET LOCAL enable_bitmapscan = off');
      const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${USAGE.text}`, [owner.id, new Date(Date.now() - 30 * DAY_MS), new Date(), true, false]);
      await client.query('ROLLBACK');
      const nodes: Array<Record<string, unknown>> = [];
      const walk = (n: Record<string, unknown>) => {
        nodes.push(n);
        for (const child of (n.Plans as Array<Record<string, unknown>> | undefined) ?? []) walk(child);
      };
      walk(rows[0]['QUERY PLAN'][0].Plan);
      const scans = nodes.filter((n) => n['Relation Name'] === 'tasks');
      expect(scans.map((n) => ({ type: n['Node Type'], index: n['Index Name'] }))).toEqual([{ type: 'Index Only Scan', index: 'tasks_usage_by_key_idx' }]);
      expect(String(scans[0]!['Index Cond'])).toMatch(/^\(\(account_id = '[^']+'::text\) AND \(created_at >= '[^']+'::timestamp with time zone\) AND \(created_at < '[^']+'::timestamp with time zone\)\)$/);
      expect(scans[0]!.Filter).toBeUndefined();
    } finally {
      client.release();
    }
  });
});
