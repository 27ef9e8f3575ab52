// Batch creation (docs/api.md, "Batch creation"): `POST /api/tasks/{kind}/batch`, all or nothing
// for validation, credits, spend limits and rate limits, one charge in one transaction.
import { TaskApi, TaskApiError } from '../../../packages/client/src';
import { createKey, seedAccount, seedGrant, startApi, topUp, withKey, type CreatedKey, type TestAccount, type TestApi } from './support/harness';

const image = (i: number) => ({ prompt: `batch ${i}`, width: 64, height: 64 });

async function balance(api: TestApi, account: TestAccount): Promise<number> {
  return (await api.deps.db.prisma.account.findUniqueOrThrow({ where: { id: account.id } })).paidBalance;
}

async function taskCount(api: TestApi, account: TestAccount): Promise<number> {
  return api.deps.db.prisma.task.count({ where: { accountId: account.id } });
}

/** What the minute window has left, from a cheap request's `RateLimit` header (which itself takes one). */
async function minuteLeftAfterProbe(api: TestApi, key: CreatedKey): Promise<number> {
  const res = await api.req('GET', '/api/tasks?limit=1', { headers: withKey(key) });
  expect(res.status).toBe(200);
  const m = /^"minute";r=(\d+);/.exec(res.headers.get('ratelimit') ?? '');
  if (!m) throw new Error(`no minute window in ${res.headers.get('ratelimit')}`);
  return Number(m[1]);
}

describe('batch creation', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startApi();
  });
  afterAll(async () => {
    await api.close();
  });

  it('creates every task in order with one charge; each is its own queued task; payloads echo exactly', async () => {
    const account = await seedAccount(api, { credits: 100 });
    const key = await createKey(api, account, { type: 'paid' });
    const raw = `{"tasks":[{"prompt":"a","payload":{"n":1.0,"big":12345678901234567890}},{"prompt":"b","width":128},{"prompt":"c","payload":[1, 2 ,3]}]}`;
    const res = await api.req('POST', '/api/tasks/image-generation/batch', { headers: { ...withKey(key) }, body: raw });
    expect(res.status).toBe(201);
    expect(res.headers.get('idempotent-replayed')).toBeNull();
    const tasks = res.body.data as Array<{ public_id: string; status: number; kind: string; input: { prompt: string; width: number }; cost: number }>;
    expect(tasks.map((t) => t.input.prompt)).toEqual(['a', 'b', 'c']);
    expect(tasks.map((t) => [t.status, t.kind, t.cost])).toEqual(Array(3).fill([0, 'image-generation', 2]));
    expect(tasks[1]!.input.width).toBe(128);
    expect(res.text).toContain('"payload":{"n":1.0,"big":12345678901234567890}');
    expect(res.text).toContain('"payload":[1,2,3]');
    expect(new Set(tasks.map((t) => t.public_id)).size).toBe(3);
    for (const t of tasks) expect((await api.req('GET', `/api/tasks/${t.public_id}`, { headers: withKey(key) })).body.public_id).toBe(t.public_id);

    expect(await balance(api, account)).toBe(94);
    const charges = await api.deps.db.prisma.creditLedgerEntry.findMany({ where: { accountId: account.id, entryType: 'charge' } });
    expect(charges.map((c) => c.amount)).toEqual([-2, -2, -2]);
  });

  it('a batch that fails on its last item: 400 naming tasks[i].field, nothing created, nothing charged, one request counted', async () => {
    const account = await seedAccount(api, { credits: 100 });
    const key = await createKey(api, account, { type: 'paid' });
    const before = await minuteLeftAfterProbe(api, key);
    const tasks = [image(0), image(1), image(2), { prompt: 'last', width: 5000 }];
    const res = await api.req('POST', '/api/tasks/image-generation/batch', { headers: withKey(key), body: { tasks } });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      message: 'tasks[3].width must be an integer from 64 to 1024.',
      errors: [{ field: 'tasks[3].width', message: 'tasks[3].width must be an integer from 64 to 1024' }],
    });
    expect(res.headers.get('ratelimit')).toMatch(new RegExp(`^"minute";r=${before - 1};t=\\d+$`));
    expect(await taskCount(api, account)).toBe(0);
    expect(await balance(api, account)).toBe(100);
    // The refused batch took one request (the probe takes one more).
    expect(await minuteLeftAfterProbe(api, key)).toBe(before - 2);
  });

  it('names every bad item, payload and image problems included', async () => {
    const account = await seedAccount(api, { credits: 100 });
    const key = await createKey(api, account, { type: 'paid' });
    const res = await api.req('POST', '/api/tasks/image-generation/batch', {
      headers: withKey(key),
      body: { tasks: [{ prompt: '' }, image(1), { prompt: 'x', callback_url: 'http://insecure.example' }] },
    });
    expect(res.status).toBe(400);
    expect(res.body.errors.map((e: { field: string }) => e.field)).toEqual(['tasks[0].prompt', 'tasks[2].callback_url']);

    const deep = await api.req('POST', '/api/tasks/image-generation/batch', {
      headers: withKey(key),
      body: { tasks: [image(0), { prompt: 'deep', payload: JSON.parse('['.repeat(70) + ']'.repeat(70)) }] },
    });
    expect(deep.status).toBe(400);
    expect(deep.body.errors).toEqual([{ field: 'tasks[1].payload', message: 'tasks[1].payload must be nested at most 64 levels deep' }]);

    const face = await api.req('POST', '/api/tasks/face-detection/batch', {
      headers: withKey(key),
      body: { tasks: [{ image_url: 'https://img.example/a.jpg' }, { image_base64: Buffer.from('not an image').toString('base64') }] },
    });
    expect(face.status).toBe(400);
    expect(face.body.errors).toEqual([{ field: 'tasks[1].image_base64', message: 'tasks[1].image_base64 must be a JPEG or PNG image' }]);
    expect(await taskCount(api, account)).toBe(0);
  });

  it.each([
    ['101 items', { tasks: Array.from({ length: 101 }, (_, i) => image(i)) }, 'tasks', 'tasks must have at most 100 items'],
    ['no items', { tasks: [] }, 'tasks', 'tasks must have at least 1 items'],
    ['a non-array', { tasks: { prompt: 'x' } }, 'tasks', 'tasks must be an array'],
    ['no tasks member', { prompt: 'x' }, 'tasks', 'tasks must be an array'],
    ['an item of another kind (mixed kinds)', { tasks: [image(0), { prompt: 'video', duration_seconds: 4 }] }, 'tasks[1].duration_seconds', 'tasks[1].duration_seconds is not a known field'],
    ['an item that is not an object', { tasks: [image(0), 'prompt'] }, 'tasks[1]', 'tasks[1] must be a JSON object'],
  ])('%s → 400 naming the field', async (_name, body, field, message) => {
    const account = await seedAccount(api, { credits: 1000 });
    const key = await createKey(api, account, { type: 'paid' });
    const res = await api.req('POST', '/api/tasks/image-generation/batch', { headers: withKey(key), body });
    expect(res.status).toBe(400);
    expect(res.body.errors).toContainEqual({ field, message });
    expect(await taskCount(api, account)).toBe(0);
  });

  it('credits short for the whole batch → 402 with the batch total, nothing created', async () => {
    const account = await seedAccount(api, { credits: 5 });
    const key = await createKey(api, account, { type: 'paid' });
    const res = await api.req('POST', '/api/tasks/image-generation/batch', { headers: withKey(key), body: { tasks: [image(0), image(1), image(2)] } });
    expect(res.status).toBe(402);
    expect(res.body).toEqual({ message: 'Insufficient credits.', required: 6, available: 5 });
    expect(await taskCount(api, account)).toBe(0);
    expect(await balance(api, account)).toBe(5);
    // Two fit.
    expect((await api.req('POST', '/api/tasks/image-generation/batch', { headers: withKey(key), body: { tasks: [image(0), image(1)] } })).status).toBe(201);
    expect(await balance(api, account)).toBe(1);
  });

  it('a batch that would pass the key\'s spend limit → the spend-limit 402 (before the credits one), nothing created', async () => {
    const account = await seedAccount(api, { credits: 3 });
    const key = await createKey(api, account, { type: 'paid', spend_limit: { credits: 4, period: 'day' } });
    const res = await api.req('POST', '/api/tasks/image-generation/batch', { headers: withKey(key), body: { tasks: [image(0), image(1), image(2)] } });
    expect(res.status).toBe(402);
    expect(res.body).toEqual({ message: "This key's spend limit is reached.", limit: 4, period: 'day', spent: 0 });
    expect(await taskCount(api, account)).toBe(0);
    expect(await balance(api, account)).toBe(3);
  });

  describe('rate limits (trial key: 20 requests a minute)', () => {
    let account: TestAccount;
    let key: CreatedKey;
    beforeEach(async () => {
      account = await seedAccount(api);
      key = await createKey(api, account, { type: 'trial', grant_id: await seedGrant(api, account, 1000) });
    });
    const face = (n: number) => ({ tasks: Array.from({ length: n }, () => ({ image_url: 'https://img.example/a.jpg' })) });

    it('counts one request per task; a batch with not enough room left → 429, nothing created, nothing counted', async () => {
      const first = await api.req('POST', '/api/tasks/face-detection/batch', { headers: withKey(key), body: face(15) });
      expect(first.status).toBe(201);
      expect(first.headers.get('ratelimit')).toMatch(/^"minute";r=5;t=\d+$/);

      const second = await api.req('POST', '/api/tasks/face-detection/batch', { headers: withKey(key), body: face(6) });
      expect(second.status).toBe(429);
      expect(second.body).toEqual({ message: 'Rate limit exceeded.', limit: 20, window: 'minute', retry_after: expect.any(Number) });
      expect(Number(second.headers.get('retry-after'))).toBe(second.body.retry_after);
      expect(await taskCount(api, account)).toBe(15);

      // The refused batch counted nothing: exactly 5 fit.
      expect((await api.req('POST', '/api/tasks/face-detection/batch', { headers: withKey(key), body: face(5) })).status).toBe(201);
      expect((await api.req('GET', '/api/tasks?limit=1', { headers: withKey(key) })).status).toBe(429);
      expect(await taskCount(api, account)).toBe(20);
    });

    it('a batch larger than the minute window can ever hold → 429 that says so, without Retry-After, counting nothing', async () => {
      const res = await api.req('POST', '/api/tasks/face-detection/batch', { headers: withKey(key), body: face(21) });
      expect(res.status).toBe(429);
      expect(res.body).toEqual({
        message: "This batch of 21 tasks is larger than this key's rate limit of 20 requests per minute can ever hold; send at most 20 tasks per batch.",
        limit: 20,
        window: 'minute',
      });
      expect(res.headers.get('retry-after')).toBeNull();
      expect(await taskCount(api, account)).toBe(0);
      expect((await api.req('POST', '/api/tasks/face-detection/batch', { headers: withKey(key), body: face(20) })).status).toBe(201);
    });
  });

  describe('Idempotency-Key', () => {
    it('replays the batch (charged once); a different body, or a key first used for one task, is a 409', async () => {
      const account = await seedAccount(api, { credits: 100 });
      const key = await createKey(api, account, { type: 'paid' });
      const headers = { ...withKey(key), 'idempotency-key': 'batch-1' };
      const body = { tasks: [image(0), image(1)] };
      const first = await api.req('POST', '/api/tasks/image-generation/batch', { headers, body });
      expect(first.status).toBe(201);
      // Same body, other key order and whitespace.
      const again = await api.req('POST', '/api/tasks/image-generation/batch', {
        headers,
        body: '{ "tasks": [ {"height":64, "width":64, "prompt":"batch 0"}, {"prompt":"batch 1","width":64,"height":64} ] }',
      });
      expect(again.status).toBe(201);
      expect(again.headers.get('idempotent-replayed')).toBe('true');
      expect(again.body.data.map((t: { public_id: string }) => t.public_id)).toEqual(first.body.data.map((t: { public_id: string }) => t.public_id));
      expect(await balance(api, account)).toBe(96);
      expect(await taskCount(api, account)).toBe(2);

      const changed = await api.req('POST', '/api/tasks/image-generation/batch', { headers, body: { tasks: [image(0)] } });
      expect(changed.status).toBe(409);
      const single = await api.req('POST', '/api/tasks/image-generation', { headers, body: image(0) });
      expect(single.status).toBe(409);

      const onceSingle = { ...withKey(key), 'idempotency-key': 'single-1' };
      expect((await api.req('POST', '/api/tasks/image-generation', { headers: onceSingle, body: image(0) })).status).toBe(201);
      expect((await api.req('POST', '/api/tasks/image-generation/batch', { headers: onceSingle, body: { tasks: [image(0)] } })).status).toBe(409);
    });

    it('concurrent twins create the batch once', async () => {
      const account = await seedAccount(api, { credits: 100 });
      const key = await createKey(api, account, { type: 'paid' });
      const headers = { ...withKey(key), 'idempotency-key': 'twins' };
      const body = { tasks: [image(0), image(1), image(2)] };
      const results = await Promise.all(Array.from({ length: 5 }, () => api.req('POST', '/api/tasks/image-generation/batch', { headers, body })));
      expect(results.map((r) => r.status)).toEqual(Array(5).fill(201));
      const ids = new Set(results.map((r) => JSON.stringify(r.body.data.map((t: { public_id: string }) => t.public_id))));
      expect(ids.size).toBe(1);
      expect(await taskCount(api, account)).toBe(3);
      expect(await balance(api, account)).toBe(94);
    });

    it('a refused batch leaves its key free', async () => {
      const account = await seedAccount(api, { credits: 1 });
      const key = await createKey(api, account, { type: 'paid' });
      const headers = { ...withKey(key), 'idempotency-key': 'after-top-up' };
      const body = { tasks: [image(0)] };
      expect((await api.req('POST', '/api/tasks/image-generation/batch', { headers, body })).status).toBe(402);
      await topUp(api, account, 10);
      expect((await api.req('POST', '/api/tasks/image-generation/batch', { headers, body })).status).toBe(201);
    });
  });

  it('the SDK: api.tasks.createBatch(kind, items) creates them in order; a bad item is a TaskApiError naming it', async () => {
    const account = await seedAccount(api, { credits: 100 });
    const key = await createKey(api, account, { type: 'paid' });
    const sdk = new TaskApi({ apiKey: key.plaintext, baseUrl: api.url });
    const tasks = await sdk.tasks.createBatch('face-detection', [{ image_url: 'https://img.example/1.jpg' }, { image_url: 'https://img.example/2.jpg', payload: { n: 2 } }]);
    expect(tasks.map((t) => [t.kind, t.input, t.payload])).toEqual([
      ['face-detection', { image_url: 'https://img.example/1.jpg' }, null],
      ['face-detection', { image_url: 'https://img.example/2.jpg' }, { n: 2 }],
    ]);
    const err = await sdk.tasks.createBatch('image-generation', [{ prompt: 'ok' }, { prompt: 'x', width: 1 }]).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TaskApiError);
    expect(err).toMatchObject({ status: 400, body: { errors: [{ field: 'tasks[1].width', message: 'tasks[1].width must be an integer from 64 to 1024' }] } });
    expect(await taskCount(api, account)).toBe(2);
  });
});
