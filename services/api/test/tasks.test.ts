import fs from 'node:fs';
import path from 'node:path';
import { TaskStatus } from '@taskapi/domain';
import { TaskRows } from '@taskapi/task-lifecycle';
import { inputKey } from '@taskapi/file-store';
import { newId } from '@taskapi/ids';
import { TASK_QUEUES } from '@taskapi/queue';
import type { TestResponse } from '@taskapi/testing';
import { purgeExpiredIdempotencyKeys } from '../src/domain/housekeeping';
import { createKey, seedAccount, seedGrant, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from './support/harness';

const FIXTURES = path.resolve(__dirname, '../../../test/fixtures');
const TASK_FIELDS = [
  'public_id',
  'kind',
  'status',
  'error_code',
  'error_message',
  'input',
  'payload',
  'callback_url',
  'cost',
  'created_at',
  'started_at',
  'finished_at',
  'result',
  'files',
  'files_expired_at',
  'priority',
  'ttl_seconds',
  'fairness_key',
  'progress',
  'queue',
].sort();

describe('tasks API', () => {
  let api: TestApi;
  let account: TestAccount;
  let key: CreatedKey;

  beforeAll(async () => {
    api = await startApi();
    account = await seedAccount(api, { credits: 1_000 });
    key = await createKey(api, account, { type: 'paid' });
  });
  afterAll(async () => {
    await api.close();
  });

  const balance = async (acct: TestAccount = account) =>
    (await api.deps.db.prisma.account.findUniqueOrThrow({ where: { id: acct.id } })).paidBalance;
  const redisText = async (hash: string, field: string) => (await api.deps.queueRedis.hget(hash, field)) ?? '';
  const create = (kind: string, body: unknown, headers: Record<string, string> = withKey(key)) =>
    api.req('POST', `/api/tasks/${kind}`, { headers, body });

  describe('creation', () => {
    it('creates a video task with defaults, charges 10 credits and hands it to the scheduler', async () => {
      const before = await balance();
      const res = await create('video-generation', { prompt: 'a calm sea at dawn' });
      expect(res.status).toBe(201);
      expect(Object.keys(res.body).sort()).toEqual(TASK_FIELDS);
      expect(res.body).toMatchObject({
        kind: 'video-generation',
        status: 0,
        error_code: null,
        error_message: null,
        input: { prompt: 'a calm sea at dawn', duration_seconds: 4 },
        payload: null,
        callback_url: null,
        cost: 10,
        started_at: null,
        finished_at: null,
        result: null,
        files: [],
        files_expired_at: null,
      });
      expect(res.body.public_id).toMatch(/^task_[A-Za-z0-9]{22}$/);
      expect(new Date(res.body.created_at).toISOString()).toBe(res.body.created_at);
      expect(res.headers.get('location')).toBe(`${api.url}/api/tasks/${res.body.public_id}`);
      expect(await balance()).toBe(before - 10);

      const ledger = await api.deps.db.prisma.creditLedgerEntry.findMany({ where: { task: { publicId: res.body.public_id } } });
      expect(ledger).toEqual([expect.objectContaining({ entryType: 'charge', amount: -10, grantId: null })]);

      // In its account's line, or already released to its kind's queue as a job carrying ids only.
      const record = (await api.deps.taskLifecycle.queueFigures.lookup([res.body.public_id])).get(res.body.public_id);
      expect(record).toMatchObject({ kind: 'video-generation', accountId: account.id });
      const job = await api.deps.taskQueues.queues['video-generation'].getJob(res.body.public_id);
      if (record!.state === 'ready') {
        expect(job?.data).toEqual({ public_id: res.body.public_id, account_id: account.id, release: 1 });
        expect(job?.queueName).toBe(TASK_QUEUES['video-generation'].name);
      } else {
        expect(record!.state).toBe('pending');
        expect(job).toBeUndefined();
      }
    });

    it('creates image and face-detection tasks with their costs and parameters', async () => {
      const image = await create('image-generation', { prompt: 'a red fox', width: 256, height: 1024 });
      expect(image.status).toBe(201);
      expect(image.body).toMatchObject({ cost: 2, input: { prompt: 'a red fox', width: 256, height: 1024 } });

      const face = await create('face-detection', { image_url: 'https://images.example.com/a.jpg', callback_url: 'https://hooks.example.com/x?y=1' });
      expect(face.status).toBe(201);
      expect(face.body).toMatchObject({
        cost: 1,
        input: { image_url: 'https://images.example.com/a.jpg' },
        callback_url: 'https://hooks.example.com/x?y=1',
      });
    });

    it('accepts image_base64 (PNG, JPEG, data: URL) and stores the bytes in the file store, not in PostgreSQL or the job', async () => {
      for (const [file, type] of [
        ['astronaut.png', 'image/png'],
        ['rocket.jpg', 'image/jpeg'],
      ] as const) {
        const bytes = fs.readFileSync(path.join(FIXTURES, file));
        for (const encoded of [bytes.toString('base64'), `data:${type};base64,${bytes.toString('base64')}`]) {
          const res = await create('face-detection', { image_base64: encoded });
          expect(res.status).toBe(201);
          expect(res.body.input).toEqual({ image_upload: { content_type: type, size: bytes.length } });
          const stored = await api.deps.db.prisma.taskInput.findFirstOrThrow({ where: { task: { publicId: res.body.public_id } } });
          expect({ contentType: stored.contentType, inStore: stored.inStore, data: stored.data }).toEqual({ contentType: type, inStore: true, data: null });
          const object = await api.deps.store.get(inputKey(res.body.public_id));
          expect(Buffer.concat(await object!.body.toArray()).equals(bytes)).toBe(true);
          // Scheduling state and jobs hold ids only.
          const record = await redisText(`taskapi:{sched}:tasks`, res.body.public_id);
          expect(record).not.toContain(bytes.toString('base64').slice(0, 32));
          const job = await api.deps.taskQueues.queues['face-detection'].getJob(res.body.public_id);
          if (job) expect(job.data).toEqual({ public_id: res.body.public_id, account_id: account.id, release: 1 });
        }
      }
    });

    it('stores and echoes payload exactly as sent: key order, number lexemes, big integers', async () => {
      const payloadText = '{"z":1,"a":12345678901234567890,"n":1.0,"e":1E+2,"2":"two","s":"h\\u00e9 \\"q\\" }{","nested":[{"b":null,"a":[]}],"t":true}';
      const raw = `{ "prompt": "fox",\n  "payload" : ${payloadText.replace(/,/g, ' ,\n ')} }`;
      const res = await create('image-generation', raw);
      expect(res.status).toBe(201);
      expect(res.text).toContain(`"payload":${payloadText}`);
      const fetched = await api.req('GET', `/api/tasks/${res.body.public_id}`, { headers: withKey(key) });
      expect(fetched.text).toContain(`"payload":${payloadText}`);
      const listed = await api.req('GET', '/api/tasks?limit=1', { headers: withKey(key) });
      expect(listed.text).toContain(`"payload":${payloadText}`);
    });

    it('accepts any JSON value as payload; null or absent is null', async () => {
      for (const payload of ['text', 42, -0.5, true, false, [1, 'two', { three: 3 }], { deep: { deeper: { deepest: [] } } }]) {
        const res = await create('image-generation', { prompt: 'p', payload });
        expect(res.status).toBe(201);
        expect(res.body.payload).toEqual(payload);
      }
      expect((await create('image-generation', { prompt: 'p', payload: null })).body.payload).toBeNull();
    });

    it('rejects invalid parameters with 400 and a message naming the field', async () => {
      const cases: Array<[string, unknown, string]> = [
        ['video-generation', {}, 'prompt'],
        ['video-generation', { prompt: '' }, 'prompt'],
        ['video-generation', { prompt: '   ' }, 'prompt'],
        ['video-generation', { prompt: 'x'.repeat(2001) }, 'prompt'],
        ['video-generation', { prompt: 42 }, 'prompt'],
        ['video-generation', { prompt: 'p', duration_seconds: 0 }, 'duration_seconds'],
        ['video-generation', { prompt: 'p', duration_seconds: 11 }, 'duration_seconds'],
        ['video-generation', { prompt: 'p', duration_seconds: 4.5 }, 'duration_seconds'],
        ['video-generation', { prompt: 'p', duration_seconds: '4' }, 'duration_seconds'],
        ['image-generation', { prompt: 'p', width: 63 }, 'width'],
        ['image-generation', { prompt: 'p', height: 1025 }, 'height'],
        ['image-generation', { prompt: 'p', colour: 'red' }, 'colour'],
        ['image-generation', { prompt: 'p', callback_url: 'http://example.com/hook' }, 'callback_url'],
        ['image-generation', { prompt: 'p', callback_url: 'https://' }, 'callback_url'],
        ['image-generation', { prompt: 'p', callback_url: 'ftp://example.com' }, 'callback_url'],
        ['image-generation', { prompt: 'p', callback_url: 'HTTPS//example.com' }, 'callback_url'],
        ['image-generation', { prompt: 'p', callback_url: `https://example.com/${'a'.repeat(2100)}` }, 'callback_url'],
        ['image-generation', { prompt: 'p', payload: { big: 'x'.repeat(70_000) } }, 'payload'],
        ['face-detection', {}, 'image_url'],
        ['face-detection', { image_url: 'https://a.example/x.png', image_base64: 'iVBORw0KGgo=' }, 'image_url'],
        ['face-detection', { image_url: 'http://a.example/x.png' }, 'image_url'],
        ['face-detection', { image_base64: 'not base64!' }, 'image_base64'],
        ['face-detection', { image_base64: Buffer.from('GIF89a not a png').toString('base64') }, 'image_base64'],
      ];
      const before = await balance();
      for (const [kind, body, field] of cases) {
        const res = await create(kind, body);
        expect({ kind, body, status: res.status }).toEqual({ kind, body, status: 400 });
        expect(typeof res.body.message).toBe('string');
        expect(res.body.message).toContain(field);
      }
      expect(await balance()).toBe(before);
    });

    it('rejects an image larger than 8 MiB', async () => {
      const png = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(8 * 1024 * 1024)]);
      const res = await create('face-detection', { image_base64: png.toString('base64') });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: 'image_base64 must be an image of at most 8 MiB.', errors: [{ field: 'image_base64', message: 'image_base64 must be an image of at most 8 MiB' }] });
    });

    it('answers 402 with required and available when credits are short, and creates nothing', async () => {
      const poor = await seedAccount(api, { credits: 9 });
      const poorKey = await createKey(api, poor, { type: 'paid' });
      const res = await create('video-generation', { prompt: 'p' }, withKey(poorKey));
      expect(res.status).toBe(402);
      expect(res.body).toEqual({ message: 'Insufficient credits.', required: 10, available: 9 });
      expect(await balance(poor)).toBe(9);
      expect(await api.deps.db.prisma.task.count({ where: { accountId: poor.id } })).toBe(0);
    });

    it('trial keys draw on their grant, not on the paid balance', async () => {
      const acct = await seedAccount(api, { credits: 100 });
      const grant = await seedGrant(api, acct, 3);
      const trial = await createKey(api, acct, { type: 'trial', grant_id: grant });
      expect((await create('image-generation', { prompt: 'p' }, withKey(trial))).status).toBe(201);
      const short = await create('image-generation', { prompt: 'p' }, withKey(trial));
      expect(short.status).toBe(402);
      expect(short.body).toEqual({ message: 'Insufficient credits.', required: 2, available: 1 });
      expect(await balance(acct)).toBe(100);
      const g = await api.deps.db.prisma.trialGrant.findUniqueOrThrow({ where: { id: grant } });
      expect(g.quotaRemaining).toBe(1);
    });
  });

  describe('Idempotency-Key', () => {
    it('replays the first response for the same key and body, charging once', async () => {
      const before = await balance();
      const headers = { ...withKey(key), 'idempotency-key': `order-${newId('request')}` };
      const first = await create('image-generation', { prompt: 'same', width: 128, payload: { n: 1 } }, headers);
      const second = await create('image-generation', { width: 128, payload: { n: 1 }, prompt: 'same' }, headers);
      expect(first.status).toBe(201);
      expect(second.status).toBe(201);
      expect(second.text).toBe(first.text);
      expect(second.headers.get('idempotent-replayed')).toBe('true');
      expect(first.headers.get('idempotent-replayed')).toBeNull();
      expect(await balance()).toBe(before - 2);
    });

    it('answers 409 when the key is reused with a different body or kind', async () => {
      const headers = { ...withKey(key), 'idempotency-key': newId('request') };
      expect((await create('image-generation', { prompt: 'one' }, headers)).status).toBe(201);
      const different = await create('image-generation', { prompt: 'two' }, headers);
      expect(different.status).toBe(409);
      expect(different.body).toEqual({ message: 'This Idempotency-Key was already used with a different request.' });
      expect((await create('video-generation', { prompt: 'one' }, headers)).status).toBe(409);
    });

    it('charges once when the same request races with itself', async () => {
      const before = await balance();
      const headers = { ...withKey(key), 'idempotency-key': newId('request') };
      const results = await Promise.all(Array.from({ length: 10 }, () => create('video-generation', { prompt: 'race' }, headers)));
      expect(results.map((r) => r.status)).toEqual(Array(10).fill(201));
      expect(new Set(results.map((r) => r.body.public_id)).size).toBe(1);
      expect(await balance()).toBe(before - 10);
    });

    it('replays instead of 402 when the first request spent the last credits', async () => {
      const acct = await seedAccount(api, { credits: 2 });
      const k = await createKey(api, acct, { type: 'paid' });
      const headers = { ...withKey(k), 'idempotency-key': 'only-one' };
      const results = await Promise.all(Array.from({ length: 5 }, () => create('image-generation', { prompt: 'p' }, headers)));
      expect(results.map((r) => r.status)).toEqual(Array(5).fill(201));
      expect(await balance(acct)).toBe(0);
    });

    it('forgets keys after 24 hours: the purge removes them and the key can be used afresh', async () => {
      const idem = newId('request');
      const headers = { ...withKey(key), 'idempotency-key': idem };
      const first = await create('image-generation', { prompt: 'old' }, headers);
      await api.deps.db.pool.query("UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = $1", [idem]);
      // Older than 24 h: no longer a replay, and the record is taken over.
      const second = await create('image-generation', { prompt: 'new' }, headers);
      expect(second.status).toBe(201);
      expect(second.body.public_id).not.toBe(first.body.public_id);
      await api.deps.db.pool.query("UPDATE idempotency_keys SET created_at = now() - interval '25 hours' WHERE key = $1", [idem]);
      expect(await purgeExpiredIdempotencyKeys(api.deps.repos.idempotency)).toBeGreaterThanOrEqual(1);
      expect((await api.deps.db.pool.query('SELECT 1 FROM idempotency_keys WHERE key = $1', [idem])).rowCount).toBe(0);
    });

    it('rejects malformed idempotency keys', async () => {
      const res = await create('image-generation', { prompt: 'p' }, { ...withKey(key), 'idempotency-key': 'x'.repeat(256) });
      expect(res.status).toBe(400);
      expect(res.body.message).toContain('Idempotency-Key');
    });
  });

  describe('reading', () => {
    it('returns the account\'s task; 404 for other accounts, unknown and hostile ids', async () => {
      const created = await create('image-generation', { prompt: 'mine' });
      const got = await api.req('GET', `/api/tasks/${created.body.public_id}`, { headers: withKey(key) });
      expect(got.status).toBe(200);
      expect(got.body).toEqual(created.body);

      const stranger = await seedAccount(api);
      const strangerKey = await createKey(api, stranger, { type: 'paid' });
      const ids = [
        created.body.public_id,
        newId('task'),
        'task_',
        '..%2F..%2Fetc%2Fpasswd',
        "task_1' OR '1'='1",
        'task_' + 'a'.repeat(500),
        '%00',
      ];
      for (const id of ids) {
        const res = await api.req('GET', `/api/tasks/${encodeURIComponent(id)}`, { headers: withKey(strangerKey) });
        expect(res.status).toBe(404);
        expect(res.body).toEqual({ message: 'Task not found.' });
      }
    });

    it('lists newest first with cursor pagination and filters', async () => {
      const acct = await seedAccount(api, { credits: 100 });
      const k = await createKey(api, acct, { type: 'paid' });
      const ids: string[] = [];
      for (const kind of ['image-generation', 'face-detection', 'image-generation', 'video-generation', 'image-generation']) {
        const body = kind === 'face-detection' ? { image_url: 'https://a.example/x.png' } : { prompt: 'p' };
        ids.push((await create(kind, body, withKey(k))).body.public_id);
      }
      await api.req('POST', `/api/tasks/${ids[0]}/cancel`, { headers: withKey(k) });
      const newestFirst = [...ids].reverse();

      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: TestResponse = await api.req('GET', `/api/tasks?limit=2${cursor ? `&cursor=${cursor}` : ''}`, {
          headers: withKey(k),
        });
        expect(page.status).toBe(200);
        expect(page.body.data.length).toBeLessThanOrEqual(2);
        seen.push(...page.body.data.map((t: { public_id: string }) => t.public_id));
        cursor = page.body.next_cursor;
      } while (cursor);
      expect(seen).toEqual(newestFirst);

      const images = await api.req('GET', '/api/tasks?kind=image-generation', { headers: withKey(k) });
      expect(images.body.data.map((t: { public_id: string }) => t.public_id)).toEqual([ids[4], ids[2], ids[0]]);
      const cancelled = await api.req('GET', '/api/tasks?status=40', { headers: withKey(k) });
      expect(cancelled.body.data.map((t: { public_id: string }) => t.public_id)).toEqual([ids[0]]);
      const both = await api.req('GET', '/api/tasks?status=0,40&kind=image-generation&limit=1', { headers: withKey(k) });
      expect(both.body.data.map((t: { public_id: string }) => t.public_id)).toEqual([ids[4]]);
      expect(both.body.next_cursor).toBe(ids[4]);
    });

    it('rejects bad list parameters with 400', async () => {
      for (const q of ['limit=0', 'limit=101', 'limit=abc', 'limit=1&limit=2', 'status=5', 'status=0,x', 'kind=audio', 'cursor=nope', `cursor=${newId('task')}`, 'color=red']) {
        const res = await api.req('GET', `/api/tasks?${q}`, { headers: withKey(key) });
        expect({ q, status: res.status }).toEqual({ q, status: 400 });
        expect(typeof res.body.message).toBe('string');
      }
    });
  });

  describe('cancellation', () => {
    it('cancels with a full refund, once; a second cancel is 409', async () => {
      const before = await balance();
      const created = await create('video-generation', { prompt: 'p', callback_url: 'https://hooks.example.com/h' });
      const res = await api.req('POST', `/api/tasks/${created.body.public_id}/cancel`, { headers: withKey(key) });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ public_id: created.body.public_id, status: 40, error_code: null, error_message: null });
      expect(res.body.finished_at).not.toBeNull();
      expect(await balance()).toBe(before);

      const again = await api.req('POST', `/api/tasks/${created.body.public_id}/cancel`, { headers: withKey(key) });
      expect(again.status).toBe(409);
      expect(again.body).toEqual({ message: 'Task is already finished.' });
      expect(await balance()).toBe(before);
      const task = await api.deps.db.prisma.task.findUniqueOrThrow({ where: { publicId: created.body.public_id }, include: { deliveries: true, ledger: true } });
      expect(task.deliveries).toEqual([]);
      expect(task.ledger.map((l) => [l.entryType, l.amount]).sort()).toEqual([
        ['charge', -10],
        ['refund', 10],
      ]);
      expect(await api.deps.taskQueues.queues['video-generation'].getJob(created.body.public_id)).toBeUndefined();
    });

    it('refunds exactly once when many cancels race', async () => {
      const before = await balance();
      const created = await create('video-generation', { prompt: 'p' });
      const results = await Promise.all(
        Array.from({ length: 12 }, () => api.req('POST', `/api/tasks/${created.body.public_id}/cancel`, { headers: withKey(key) })),
      );
      expect(results.filter((r) => r.status === 200)).toHaveLength(1);
      expect(results.filter((r) => r.status === 409)).toHaveLength(11);
      expect(await balance()).toBe(before);
    });

    it('refunds a trial task to its grant', async () => {
      const acct = await seedAccount(api);
      const grant = await seedGrant(api, acct, 10);
      const trial = await createKey(api, acct, { type: 'trial', grant_id: grant });
      const created = await create('video-generation', { prompt: 'p' }, withKey(trial));
      expect((await api.deps.db.prisma.trialGrant.findUniqueOrThrow({ where: { id: grant } })).quotaRemaining).toBe(0);
      expect((await api.req('POST', `/api/tasks/${created.body.public_id}/cancel`, { headers: withKey(trial) })).status).toBe(200);
      expect((await api.deps.db.prisma.trialGrant.findUniqueOrThrow({ where: { id: grant } })).quotaRemaining).toBe(10);
    });

    it('a failed task carries error_message right after error_code; one failed before the column existed shows null', async () => {
      const message = 'The image at image_url could not be fetched: the server answered 404.';
      const failed = await create('image-generation', { prompt: 'p' });
      await new TaskRows(api.deps.db.pool).finish(failed.body.public_id, null, { status: TaskStatus.failed, errorCode: 'image_fetch_failed', errorMessage: message }, newId('delivery'));
      const res = await api.req('GET', `/api/tasks/${failed.body.public_id}`, { headers: withKey(key) });
      expect(res.body).toMatchObject({ status: 30, error_code: 'image_fetch_failed', error_message: message });
      expect(Object.keys(res.body).slice(3, 5)).toEqual(['error_code', 'error_message']);

      const old = await create('image-generation', { prompt: 'p' });
      await new TaskRows(api.deps.db.pool).finish(old.body.public_id, null, { status: TaskStatus.failed, errorCode: 'engine_error' }, newId('delivery'));
      const oldRes = await api.req('GET', `/api/tasks/${old.body.public_id}`, { headers: withKey(key) });
      expect(oldRes.body).toMatchObject({ status: 30, error_code: 'engine_error', error_message: null });
    });

    it('cannot cancel a finished task, nor another account\'s', async () => {
      const created = await create('image-generation', { prompt: 'p' });
      await new TaskRows(api.deps.db.pool).finish(created.body.public_id, null, { status: TaskStatus.completed, result: {} }, newId('delivery'));
      const res = await api.req('POST', `/api/tasks/${created.body.public_id}/cancel`, { headers: withKey(key) });
      expect(res.status).toBe(409);
      expect(res.body).toEqual({ message: 'Task is already finished.' });

      const stranger = await seedAccount(api);
      const strangerKey = await createKey(api, stranger, { type: 'paid' });
      const pending = await create('image-generation', { prompt: 'p' });
      const other = await api.req('POST', `/api/tasks/${pending.body.public_id}/cancel`, { headers: withKey(strangerKey) });
      expect(other.status).toBe(404);
      expect(other.body).toEqual({ message: 'Task not found.' });
    });
  });

  describe('files', () => {
    it('serves a finished task\'s files with their content type; 404 otherwise', async () => {
      const created = await create('image-generation', { prompt: 'p' });
      const publicId = created.body.public_id as string;
      const png = fs.readFileSync(path.join(FIXTURES, 'coffee.png'));
      fs.mkdirSync(path.join(api.config.filesDir, publicId), { recursive: true });
      fs.writeFileSync(path.join(api.config.filesDir, publicId, 'image.png'), png);
      await new TaskRows(api.deps.db.pool).finish(publicId, null, { status: TaskStatus.completed, result: { width: 512 }, files: [{ name: 'image.png', content_type: 'image/png', size: png.length }] }, newId('delivery'));

      const task = await api.req('GET', `/api/tasks/${publicId}`, { headers: withKey(key) });
      expect(task.body.files).toEqual([{ name: 'image.png', content_type: 'image/png', size: png.length, url: expect.stringContaining(`${api.url}/api/files/${publicId}/image.png?`) }]);
      expect(task.body.result).toEqual({ width: 512 });

      const res = await fetch(task.body.files[0].url, { headers: withKey(key) });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('image/png');
      expect(Buffer.from(await res.arrayBuffer()).equals(png)).toBe(true);

      for (const name of ['missing.png', '..%2F..%2Fpackage.json', '.hidden', 'image.png%00']) {
        const miss = await api.req('GET', `/api/tasks/${publicId}/files/${name}`, { headers: withKey(key) });
        expect(miss.status).toBe(404);
        expect(miss.body).toEqual({ message: 'File not found.' });
      }
      const stranger = await seedAccount(api);
      const strangerKey = await createKey(api, stranger, { type: 'paid' });
      const foreign = await api.req('GET', `/api/tasks/${publicId}/files/image.png`, { headers: withKey(strangerKey) });
      expect(foreign.status).toBe(404);
      expect(foreign.body).toEqual({ message: 'Task not found.' });
    });

    it('files[].url is a signed link: no API key, browser headers, ranges; altered, expired or moved to another name → 403', async () => {
      const created = await create('image-generation', { prompt: 'p' });
      const publicId = created.body.public_id as string;
      const png = fs.readFileSync(path.join(FIXTURES, 'coffee.png'));
      fs.mkdirSync(path.join(api.config.filesDir, publicId), { recursive: true });
      fs.writeFileSync(path.join(api.config.filesDir, publicId, 'image.png'), png);
      await new TaskRows(api.deps.db.pool).finish(publicId, null, { status: TaskStatus.completed, result: {}, files: [{ name: 'image.png', content_type: 'image/png', size: png.length }] }, newId('delivery'));

      const before = Math.floor(Date.now() / 1000);
      const url = new URL((await api.req('GET', `/api/tasks/${publicId}`, { headers: withKey(key) })).body.files[0].url);
      expect(url.pathname).toBe(`/api/files/${publicId}/image.png`);
      const expires = Number(url.searchParams.get('expires'));
      // FILE_URL_TTL_SECONDS: 3600 by default.
      expect(expires - before).toBeGreaterThanOrEqual(3599);
      expect(expires - before).toBeLessThanOrEqual(3601);

      const res = await fetch(url);
      expect(res.status).toBe(200);
      expect({
        type: res.headers.get('content-type'),
        disposition: res.headers.get('content-disposition'),
        length: res.headers.get('content-length'),
        ranges: res.headers.get('accept-ranges'),
      }).toEqual({ type: 'image/png', disposition: 'inline; filename="image.png"', length: String(png.length), ranges: 'bytes' });
      const maxAge = Number(/^private, max-age=(\d+)$/.exec(res.headers.get('cache-control') ?? '')?.[1]);
      expect(maxAge).toBeGreaterThan(3500);
      expect(maxAge).toBeLessThanOrEqual(expires - before);
      expect(Buffer.from(await res.arrayBuffer()).equals(png)).toBe(true);

      const part = await fetch(url, { headers: { range: 'bytes=100-199' } });
      expect({ status: part.status, range: part.headers.get('content-range') }).toEqual({ status: 206, range: `bytes 100-199/${png.length}` });
      expect(Buffer.from(await part.arrayBuffer()).equals(png.subarray(100, 200))).toBe(true);

      const other = await create('image-generation', { prompt: 'p' });
      const signature = url.searchParams.get('signature') as string;
      const flipped = `${signature[0] === 'A' ? 'B' : 'A'}${signature.slice(1)}`;
      const refused = [
        `${url.pathname}?expires=${expires}&signature=${flipped}`,
        `${url.pathname}?expires=${expires + 1}&signature=${signature}`,
        `/api/files/${publicId}/video.mp4?expires=${expires}&signature=${signature}`,
        `/api/files/${other.body.public_id}/image.png?expires=${expires}&signature=${signature}`,
        `${url.pathname}?expires=${expires}`,
        url.pathname,
        new URL(api.deps.fileLinks.routeUrl(publicId, 'image.png', before - 1)).pathname + new URL(api.deps.fileLinks.routeUrl(publicId, 'image.png', before - 1)).search,
      ];
      for (const path of refused) {
        const denied = await api.req('GET', path);
        expect({ path, status: denied.status, body: denied.body }).toEqual({ path, status: 403, body: { message: 'This file link is invalid or has expired.' } });
      }

      // The API-key route keeps working, with its long cache lifetime.
      const keyed = await fetch(`${api.url}/api/tasks/${publicId}/files/image.png`, { headers: withKey(key) });
      expect({ status: keyed.status, cache: keyed.headers.get('cache-control') }).toEqual({ status: 200, cache: 'private, max-age=86400, immutable' });
      await keyed.arrayBuffer();
    });

    it('a listed file missing on disk is a 404, not a 500', async () => {
      const created = await create('image-generation', { prompt: 'p' });
      await new TaskRows(api.deps.db.pool).finish(created.body.public_id, null, { status: TaskStatus.completed, result: {}, files: [{ name: 'gone.png', content_type: 'image/png', size: 1 }] }, newId('delivery'));
      const res = await api.req('GET', `/api/tasks/${created.body.public_id}/files/gone.png`, { headers: withKey(key) });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: 'File not found.' });
    });
  });
});
