// GET /api/usage: the usage export, grouped by day, kind or key, as JSON and CSV, against a real
// database. Tasks are created through the API with two keys (so charges and refunds land in the
// ledger as in production), ended the way the worker and the cancel endpoint end them, then moved
// back in time. In a database of its own: queued tasks days old would otherwise be picked up by
// other test files' sweepers.
import { recreateDatabase, testDatabaseUrl } from '@taskapi/testing';
import { API_ERRORS } from '../src/errors';
import { USAGE } from '../src/repositories/tasks';
import { usageExportSchema } from '../src/schemas/usage';
import { createKey, seedAccount, seedGrant, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from './support/harness';
import { isoDay, seedUsageTask, type UsageEnd, type UsageKind } from './support/usage-tasks';

const DAY_MS = 86_400_000;
const DATABASE_URL = testDatabaseUrl('usage_export');
type Kind = UsageKind;

const COST: Record<Kind, number> = { 'video-generation': 10, 'image-generation': 2, 'face-detection': 1 };

const figures = (tasks: number, completed: number, failed: number, cancelled: number, credits: number) => ({ tasks, completed, failed, cancelled, credits });
const ZERO = figures(0, 0, 0, 0, 0);

describe('GET /api/usage', () => {
  let api: TestApi;
  let owner: TestAccount;
  let other: TestAccount;
  let paid: CreatedKey;
  let trial: CreatedKey;

  /** Creates a task with `key`, ends it as asked, and moves its creation to `at` (an ISO instant). */
  async function seedTask(key: CreatedKey, kind: Kind, end: UsageEnd, at: string): Promise<void> {
    expect((await seedUsageTask(api, owner, key, kind, end, at)).cost).toBe(COST[kind]);
  }

  const usage = (query: string, opts: { who?: TestAccount; accept?: string } = {}) =>
    api.req('GET', `/api/usage${query}`, { headers: { ...(opts.who ?? owner).auth, ...(opts.accept ? { accept: opts.accept } : {}) } });
  const RANGE = `?from=${isoDay(6)}&to=${isoDay(1)}`;

  beforeAll(async () => {
    await recreateDatabase(DATABASE_URL);
    api = await startApi({ DATABASE_URL });
    owner = await seedAccount(api, { credits: 1000, label: 'usage-export' });
    other = await seedAccount(api, { credits: 100, label: 'usage-export-other' });
    paid = await createKey(api, owner, { type: 'paid' });
    trial = await createKey(api, owner, { type: 'trial', grant_id: await seedGrant(api, owner, 100) });
    const otherKey = await createKey(api, other, { type: 'paid' });

    // The range is 6 to 1 days ago. Its first day, from its very first millisecond: an image
    // completed (paid), a video failed (refunded, paid), a face cancelled (refunded, trial).
    await seedTask(paid, 'image-generation', 'completed', `${isoDay(6)}T00:00:00.000Z`);
    await seedTask(paid, 'video-generation', 'failed', `${isoDay(6)}T08:00:00.000Z`);
    await seedTask(trial, 'face-detection', 'cancelled', `${isoDay(6)}T12:00:00.000Z`);
    // Three days ago: two faces completed (trial), a video still queued (paid: charged so far).
    await seedTask(trial, 'face-detection', 'completed', `${isoDay(3)}T01:00:00.000Z`);
    await seedTask(trial, 'face-detection', 'completed', `${isoDay(3)}T02:00:00.000Z`);
    await seedTask(paid, 'video-generation', 'queued', `${isoDay(3)}T03:00:00.000Z`);
    // The last day, up to its very last millisecond: an image completed, an image failed (paid).
    await seedTask(paid, 'image-generation', 'completed', `${isoDay(1)}T10:00:00.000Z`);
    await seedTask(paid, 'image-generation', 'failed', `${isoDay(1)}T23:59:59.999Z`);
    // Just outside the range on each side, and today: never counted by it.
    await seedTask(paid, 'video-generation', 'completed', `${isoDay(7)}T23:59:59.999Z`);
    await seedTask(trial, 'face-detection', 'completed', `${isoDay(0)}T00:00:00.000Z`);
    // Another account's task in the range.
    await seedUsageTask(api, other, otherKey, 'image-generation', 'queued', `${isoDay(3)}T05:00:00Z`);
  });
  afterAll(async () => {
    await api?.close();
  });

  it('group_by=day (the default): every UTC day from `from` to `to`, both included, zeros when idle; credits net of refunds', async () => {
    const res = await usage(RANGE);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(usageExportSchema.safeParse(res.body).error).toBeUndefined();
    expect(res.body).toEqual({
      data: [
        { date: isoDay(6), ...figures(3, 1, 1, 1, COST['image-generation']) },
        { date: isoDay(5), ...ZERO },
        { date: isoDay(4), ...ZERO },
        { date: isoDay(3), ...figures(3, 2, 0, 0, 2 * COST['face-detection'] + COST['video-generation']) },
        { date: isoDay(2), ...ZERO },
        { date: isoDay(1), ...figures(2, 1, 1, 0, COST['image-generation']) },
      ],
    });
    expect((await usage(`${RANGE}&group_by=day`)).body).toEqual(res.body);
  });

  it('credits are what the ledger says these tasks cost: their charges less their refunds', async () => {
    const { body } = await usage(RANGE);
    const { rows } = await api.deps.db.pool.query<{ net: string }>(
      `SELECT COALESCE(-sum(l.amount), 0)::text AS net FROM credit_ledger l JOIN tasks t ON t.id = l.task_id
        WHERE t.account_id = $1 AND t.created_at >= $2 AND t.created_at < $3`,
      [owner.id, `${isoDay(6)}T00:00:00Z`, `${isoDay(0)}T00:00:00Z`],
    );
    expect(body.data.reduce((sum: number, d: { credits: number }) => sum + d.credits, 0)).toBe(Number(rows[0]!.net));
  });

  it('group_by=kind: every kind, in the API order', async () => {
    const res = await usage(`${RANGE}&group_by=kind`);
    expect(res.status).toBe(200);
    expect(usageExportSchema.safeParse(res.body).error).toBeUndefined();
    expect(res.body.data).toEqual([
      { kind: 'video-generation', ...figures(2, 0, 1, 0, COST['video-generation']) },
      { kind: 'image-generation', ...figures(3, 2, 1, 0, 2 * COST['image-generation']) },
      { kind: 'face-detection', ...figures(3, 2, 0, 1, 2 * COST['face-detection']) },
    ]);
  });

  it('group_by=key: one row per key that created tasks in the range (paid and trial), by prefix', async () => {
    const res = await usage(`${RANGE}&group_by=key`);
    expect(res.status).toBe(200);
    expect(usageExportSchema.safeParse(res.body).error).toBeUndefined();
    const rows = [
      { key_prefix: paid.prefix, ...figures(5, 2, 2, 0, 2 * COST['image-generation'] + COST['video-generation']) },
      { key_prefix: trial.prefix, ...figures(3, 2, 0, 1, 2 * COST['face-detection']) },
    ].sort((a, b) => (a.key_prefix < b.key_prefix ? -1 : 1));
    expect(res.body.data).toEqual(rows);
    // A revoked key still has its history.
    const another = await createKey(api, owner, { type: 'paid' });
    expect((await api.req('POST', `/api/keys/${another.id}/revoke`, { headers: owner.auth })).status).toBe(200);
    expect((await usage(`${RANGE}&group_by=key`)).body.data).toEqual(rows);
    // A range without tasks: no rows (but a day grouping still lists its days).
    expect((await usage(`?from=${isoDay(5)}&to=${isoDay(4)}&group_by=key`)).body).toEqual({ data: [] });
  });

  it('a one-day range, and today: the day is UTC, `to` included', async () => {
    expect((await usage(`?from=${isoDay(1)}&to=${isoDay(1)}`)).body.data).toEqual([{ date: isoDay(1), ...figures(2, 1, 1, 0, COST['image-generation']) }]);
    expect((await usage(`?from=${isoDay(7)}&to=${isoDay(7)}&group_by=kind`)).body.data[0]).toEqual({ kind: 'video-generation', ...figures(1, 1, 0, 0, COST['video-generation']) });
    expect((await usage(`?from=${isoDay(0)}&to=${isoDay(0)}`)).body.data).toEqual([{ date: isoDay(0), ...figures(1, 1, 0, 0, COST['face-detection']) }]);
  });

  it('Accept: text/csv answers the same rows as CSV: a header row, CRLF lines, an attachment named after the query', async () => {
    const byDay = await usage(RANGE, { accept: 'text/csv' });
    expect(byDay.status).toBe(200);
    expect(byDay.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(byDay.headers.get('content-disposition')).toBe(`attachment; filename="usage-${isoDay(6)}-to-${isoDay(1)}-by-day.csv"`);
    expect(byDay.headers.get('taskapi-version')).toBe('2026-11-01');
    const json = (await usage(RANGE)).body.data as Array<Record<string, unknown>>;
    const lines = (rows: Array<Record<string, unknown>>, first: string) => [
      `${first},tasks,completed,failed,cancelled,credits`,
      ...rows.map((r) => [r[first], r.tasks, r.completed, r.failed, r.cancelled, r.credits].join(',')),
    ];
    expect(byDay.text).toBe(`${lines(json, 'date').join('\r\n')}\r\n`);

    for (const [group, first] of [['kind', 'kind'], ['key', 'key_prefix']] as const) {
      const csv = await usage(`${RANGE}&group_by=${group}`, { accept: 'text/csv' });
      expect(csv.headers.get('content-disposition')).toBe(`attachment; filename="usage-${isoDay(6)}-to-${isoDay(1)}-by-${group}.csv"`);
      const rows = (await usage(`${RANGE}&group_by=${group}`)).body.data;
      expect(csv.text).toBe(`${lines(rows, first).join('\r\n')}\r\n`);
    }
    // No rows: the header alone.
    expect((await usage(`?from=${isoDay(5)}&to=${isoDay(4)}&group_by=key`, { accept: 'text/csv' })).text).toBe('key_prefix,tasks,completed,failed,cancelled,credits\r\n');
    // CSV only when asked for: JSON for */*, for JSON first, and when CSV is not preferred.
    for (const accept of ['*/*', 'application/json, text/csv', 'text/csv;q=0.5, application/json', 'text/html']) {
      expect({ accept, type: (await usage(RANGE, { accept })).headers.get('content-type') }).toEqual({ accept, type: 'application/json; charset=utf-8' });
    }
    expect((await usage(RANGE, { accept: 'application/json;q=0.5, text/csv' })).headers.get('content-type')).toBe('text/csv; charset=utf-8');
  });

  it('the console chart and the export agree: the same query behind both', async () => {
    const report = (await api.req('GET', '/api/console/usage?days=8', { headers: owner.auth })).body;
    const exported = (await usage(`?from=${report.from}&to=${report.to}`)).body.data;
    expect(exported.map((d: { date: string }) => d.date)).toEqual(report.data.map((d: { date: string }) => d.date));
    for (const [i, day] of report.data.entries()) {
      expect(exported[i]).toEqual({ date: day.date, tasks: day.created, completed: day.completed, failed: day.failed, cancelled: day.cancelled, credits: day.credits_spent });
    }
  });

  it("an account sees only its own tasks", async () => {
    const res = await usage(`${RANGE}&group_by=kind`, { who: other });
    expect(res.body.data.map((d: { tasks: number }) => d.tasks)).toEqual([0, 1, 0]);
  });

  it('needs a login session: none is 401, an API key is refused', async () => {
    const none = await api.req('GET', `/api/usage${RANGE}`);
    expect({ status: none.status, body: none.body }).toEqual({ status: 401, body: { message: API_ERRORS.LOGIN_REQUIRED.message } });
    const viaKey = await api.req('GET', `/api/usage${RANGE}`, { headers: withKey(paid) });
    expect({ status: viaKey.status, body: viaKey.body }).toEqual({ status: 401, body: { message: API_ERRORS.SESSION_ONLY.message } });
  });

  it('a range of 366 days is accepted; longer, reversed, or malformed dates are a 400 naming the field', async () => {
    const leap = await usage('?from=2028-01-01&to=2028-12-31');
    expect({ status: leap.status, days: leap.body.data.length }).toEqual({ status: 200, days: 366 });
    const cases: Array<[string, string, string]> = [
      ['?from=2026-01-01&to=2027-01-02', 'to', 'to must be at most 365 days after from (a range of at most 366 days).'],
      ['?from=2026-01-01&to=2030-01-01&group_by=kind', 'to', 'to must be at most 365 days after from (a range of at most 366 days).'],
      ['?from=2026-11-02&to=2026-11-01', 'to', 'to must not be before from.'],
      ['?from=2026-02-30&to=2026-03-01', 'from', 'from must be a date as YYYY-MM-DD.'],
      ['?from=2026-1-01&to=2026-03-01', 'from', 'from must be a date as YYYY-MM-DD.'],
      ['?from=2026-01-01&to=tomorrow', 'to', 'to must be a date as YYYY-MM-DD.'],
      ['?from=2026-01-01T00:00:00Z&to=2026-01-02', 'from', 'from must be a date as YYYY-MM-DD.'],
      ['?from=&to=2026-01-02', 'from', 'from must be a date as YYYY-MM-DD.'],
      ['?to=2026-01-02', 'from', 'from is required.'],
      ['?from=2026-01-01', 'to', 'to is required.'],
      ['?from=2026-01-01&to=2026-01-02&group_by=month', 'group_by', 'group_by must be one of "day", "kind", "key".'],
      ['?from=2026-01-01&to=2026-01-02&group_by=', 'group_by', 'group_by must be one of "day", "kind", "key".'],
      ['?from=2026-01-01&from=2026-01-02&to=2026-01-03', 'from', 'from must be a date as YYYY-MM-DD.'],
      ['?from=2026-01-01&to=2026-01-02&days=7', 'days', 'days is not a known field.'],
    ];
    for (const [query, field, message] of cases) {
      for (const accept of [undefined, 'text/csv']) {
        const res = await usage(query, { accept });
        expect({ query, accept, status: res.status, message: res.body?.message, fields: res.body?.errors?.map((e: { field: string }) => e.field) }).toEqual({
          query,
          accept,
          status: 400,
          message,
          fields: [field],
        });
      }
    }
  });

  it('tasks_usage_by_key_idx covers it: an index-only scan bounded by account and days, whatever it groups by', async () => {
    const client = await api.deps.db.pool.connect();
    try {
      // As autovacuum leaves a table: pages all-visible, so an index-only scan needs no heap visit.
      await client.query('VACUUM ANALYZE tasks');
      await client.query('BEGIN');
      // A test database is too small for the planner to prefer any index; take the table scans away
      // so the plan shows which index serves the query and how.
      await client.query('SET LOCAL enable_seqscan = off');
      await client.query('SET LOCAL enable_bitmapscan = off');
      // The plan on a million tasks, as the planner chooses it: docs/api.md, "Usage".
      for (const [byDay, byKey] of [[true, false], [false, false], [false, true]]) {
        const { rows } = await client.query(`EXPLAIN (FORMAT JSON) ${USAGE.text}`, [owner.id, new Date(Date.now() - 30 * DAY_MS), new Date(), byDay, byKey]);
        const nodes: Array<Record<string, unknown>> = [];
        const walk = (n: Record<string, unknown>) => {
          nodes.push(n);
          for (const child of (n.Plans as Array<Record<string, unknown>> | undefined) ?? []) walk(child);
        };
        walk(rows[0]['QUERY PLAN'][0].Plan);
        const scans = nodes.filter((n) => n['Relation Name'] === 'tasks');
        expect(scans.map((n) => ({ type: n['Node Type'], index: n['Index Name'], filter: n.Filter }))).toEqual([{ type: 'Index Only Scan', index: 'tasks_usage_by_key_idx', filter: undefined }]);
        expect(String(scans[0]!['Index Cond'])).toMatch(/^\(\(account_id = '[^']+'::text\) AND \(created_at >= '[^']+'::timestamp with time zone\) AND \(created_at < '[^']+'::timestamp with time zone\)\)$/);
      }
      await client.query('ROLLBACK');
    } finally {
      client.release();
    }
  });
});
