// Every task kind through the whole system: API → BullMQ → worker (real engines) → PostgreSQL →
// dispatcher → a real HTTPS receiver with its own CA; signatures checked with the account secret
// and with the `standardwebhooks` package.
import fs from 'node:fs';
import path from 'node:path';
import { PNG } from 'pngjs';
import { Webhook } from 'standardwebhooks';
import { webhookSignature } from '@taskapi/crypto';
import { inspectVideo, startHttpsReceiver, waitFor, type HttpsReceiver, type ReceivedRequest } from '@taskapi/testing';
import { createKey, seedAccount, seedGrant, withKey, type CreatedKey, type TestAccount } from '../../services/api/test/support/harness';
import { startDispatcher, startSystem, startWorker, type RunningService, type TestSystem } from './support/system';
import { ledgerOf, waitForTask } from './support/tasks';

const fixture = (name: string) => fs.readFileSync(path.join(__dirname, '../fixtures', name));
const REDIS_DB = 13;

describe('tasks end to end', () => {
  let system: TestSystem;
  let worker: RunningService;
  let dispatcher: RunningService;
  let receiver: HttpsReceiver;
  let account: TestAccount;
  let paidKey: CreatedKey;
  /** Balance seen by the receiver when each webhook arrived, by public_id. */
  const balanceAtArrival = new Map<string, unknown>();

  beforeAll(async () => {
    system = await startSystem(REDIS_DB);
    const { api } = system;
    receiver = await startHttpsReceiver(async (req) => {
      if (req.method === 'GET' && req.path === '/images/astronaut.png') return { status: 200, body: fixture('astronaut.png'), headers: { 'content-type': 'image/png' } };
      if (req.method === 'GET') return 404;
      const publicId = (JSON.parse(req.body.toString()) as { public_id: string }).public_id;
      const balance = await api.req('GET', '/api/credits/balance', { headers: account.auth });
      balanceAtArrival.set(publicId, balance.body);
      return 204;
    });
    const withOps = { ...system.env, OPS_PORT: '0', HOST: '127.0.0.1' };
    [worker, dispatcher] = await Promise.all([startWorker(withOps), startDispatcher(withOps)]);
    account = await seedAccount(api, { credits: 1000 });
    paidKey = await createKey(api, account, { type: 'paid' });
  });

  afterAll(async () => {
    await Promise.all([worker?.stop(), dispatcher?.stop()]);
    await receiver?.close();
    await system?.stop();
  });

  async function create(kind: string, body: Record<string, unknown>, key: CreatedKey = paidKey) {
    const res = await system.api.req('POST', `/api/tasks/${kind}`, { headers: withKey(key), body });
    expect(res.status).toBe(201);
    return res.body.public_id as string;
  }

  const hooksOf = (publicId: string) =>
    receiver.at('/hooks').filter((r) => (JSON.parse(r.body.toString()) as { public_id: string }).public_id === publicId);

  async function webhookFor(publicId: string): Promise<ReceivedRequest> {
    return waitFor(() => hooksOf(publicId)[0], { timeoutMs: 20_000, what: `the webhook of ${publicId}` });
  }

  async function currentSecret(): Promise<string> {
    return (await system.api.req('GET', '/api/webhook-secret', { headers: account.auth })).body.webhook_secret;
  }

  /** Both signatures verify with the account's current secret, over the exact bytes received. */
  async function expectSigned(hook: ReceivedRequest) {
    const secret = await currentSecret();
    expect(hook.headers['content-type']).toBe('application/json');
    expect(hook.headers['x-signature']).toBe(webhookSignature(secret, hook.body));
    expect(hook.headers['x-signature']).toMatch(/^[0-9a-f]{64}$/);
    expect(Math.abs(Number(hook.headers['x-timestamp']) - Date.now() / 1000)).toBeLessThan(60);
    expect(hook.headers['x-webhook-attempt']).toBe('1');
    const verified = new Webhook(secret).verify(hook.body.toString(), hook.headers as Record<string, string>);
    expect(verified).toEqual(JSON.parse(hook.body.toString()));
  }

  it('image generation: completed, file served, signed webhook with exactly the four fields and the payload as sent', async () => {
    const payloadText = '{"order":"A-1","big":12345678901234567890,"nested":{"z":1,"a":[true,null]}}';
    const res = await system.api.req('POST', '/api/tasks/image-generation', {
      headers: withKey(paidKey),
      body: `{"prompt":"a red fox in snow","width":96,"height":64,"callback_url":"${receiver.url('/hooks')}","payload":${payloadText}}`,
    });
    expect(res.status).toBe(201);
    const publicId = res.body.public_id as string;

    const task = await waitForTask(system.api, paidKey.plaintext, publicId);
    expect(task.status).toBe(20);
    expect(task.error_code).toBeNull();
    expect(task.files).toEqual([{ name: 'image.png', content_type: 'image/png', size: expect.any(Number), url: expect.stringContaining(`/api/files/${publicId}/image.png?expires=`) }]);
    const file = await fetch(`${system.api.url}/api/tasks/${publicId}/files/image.png`, { headers: withKey(paidKey) });
    expect(file.status).toBe(200);
    const png = PNG.sync.read(Buffer.from(await file.arrayBuffer()));
    expect([png.width, png.height]).toEqual([96, 64]);

    const hook = await webhookFor(publicId);
    await expectSigned(hook);
    expect(hook.body.toString()).toBe(`{"public_id":"${publicId}","status":20,"error_code":null,"payload":${payloadText}}`);
  });

  it('video generation: a playable video of the requested duration and a webhook', async () => {
    const publicId = await create('video-generation', { prompt: 'timelapse of clouds', duration_seconds: 1, callback_url: receiver.url('/hooks') });
    const task = await waitForTask(system.api, paidKey.plaintext, publicId);
    expect(task.status).toBe(20);
    // MP4 when the machine has ffmpeg (CI installs it), else GIF: the task says which.
    const file = await fetch(task.files[0].url, { headers: withKey(paidKey) });
    const contentType = file.headers.get('content-type') ?? '';
    expect(contentType).toBe(task.result.format === 'mp4' ? 'video/mp4' : 'image/gif');
    const facts = inspectVideo(Buffer.from(await file.arrayBuffer()), contentType);
    expect(facts.frames).toBe(task.result.frames);
    expect(facts.durationSeconds).toBeCloseTo(1, 1);
    const hook = await webhookFor(publicId);
    await expectSigned(hook);
    expect(Object.keys(JSON.parse(hook.body.toString()))).toEqual(['public_id', 'status', 'error_code', 'payload']);
  });

  it('face detection (image_base64): one face on the astronaut, in the task and in the webhook result', async () => {
    const publicId = await create('face-detection', { image_base64: fixture('astronaut.png').toString('base64'), payload: { photo: 1 }, callback_url: receiver.url('/hooks') });
    const task = await waitForTask(system.api, paidKey.plaintext, publicId);
    expect(task.status).toBe(20);
    expect(task.result.face_coordinates).toHaveLength(1);
    expect(task.result.face_coordinates[0]).toEqual({ x: expect.any(Number), y: expect.any(Number), width: expect.any(Number), height: expect.any(Number), score: expect.any(Number) });
    expect(task.result.face_coordinates[0].score).toBeGreaterThan(0.8);
    const hook = await webhookFor(publicId);
    await expectSigned(hook);
    const body = JSON.parse(hook.body.toString());
    expect(Object.keys(body)).toEqual(['public_id', 'status', 'error_code', 'payload', 'result']);
    expect(body).toEqual({ public_id: publicId, status: 20, error_code: null, payload: { photo: 1 }, result: task.result });
  });

  it('face detection (image_url over HTTPS): fetched under the egress rules; no face in coffee', async () => {
    const withFace = await create('face-detection', { image_url: receiver.url('/images/astronaut.png') });
    const coffee = await create('face-detection', { image_base64: fixture('coffee.png').toString('base64') });
    expect((await waitForTask(system.api, paidKey.plaintext, withFace)).result.face_coordinates).toHaveLength(1);
    expect((await waitForTask(system.api, paidKey.plaintext, coffee)).result).toEqual({ face_coordinates: [] });
  });

  it('failure: image_url that answers 404 → status 30 image_fetch_failed, refunded before the webhook arrives', async () => {
    const before = (await system.api.req('GET', '/api/credits/balance', { headers: account.auth })).body.paid_balance as number;
    const publicId = await create('face-detection', { image_url: receiver.url('/images/missing.png'), callback_url: receiver.url('/hooks') });
    const hook = await webhookFor(publicId);
    await expectSigned(hook);
    // The webhook body stays the spec's fields: the message is only in the task JSON.
    expect(JSON.parse(hook.body.toString())).toEqual({ public_id: publicId, status: 30, error_code: 'image_fetch_failed', payload: null, result: null });
    const task = await waitForTask(system.api, paidKey.plaintext, publicId);
    expect(task).toMatchObject({ error_code: 'image_fetch_failed', error_message: 'The image at image_url could not be fetched: the server answered 404.' });
    // The receiver records the balance it saw while it answers, just after the hook is logged.
    const seen = await waitFor(() => balanceAtArrival.get(publicId) as { paid_balance: number } | undefined, { what: 'the balance seen at arrival' });
    expect(seen.paid_balance).toBe(before);
    expect(await ledgerOf(system.api, publicId)).toEqual([
      { entry_type: 'charge', amount: -1 },
      { entry_type: 'refund', amount: 1 },
    ]);
  });

  it("a batch: each task runs as its own job with its own signed webhook; a task that fails gives its credits back to the key's spend", async () => {
    const key = await createKey(system.api, account, { type: 'paid', spend_limit: { credits: 100, period: 'day' } });
    const items = [0, 1, 2].map((i) => ({ prompt: `batch ${i}`, width: 64, height: 64, callback_url: receiver.url('/hooks'), payload: { i } }));
    const res = await system.api.req('POST', '/api/tasks/image-generation/batch', { headers: withKey(key), body: { tasks: items } });
    expect(res.status).toBe(201);
    const ids = (res.body.data as Array<{ public_id: string }>).map((t) => t.public_id);
    for (const [i, id] of ids.entries()) {
      const hook = await webhookFor(id);
      await expectSigned(hook);
      expect(JSON.parse(hook.body.toString())).toEqual({ public_id: id, status: 20, error_code: null, payload: { i } });
      expect((await waitForTask(system.api, key.plaintext, id)).files).toHaveLength(1);
    }
    for (const id of ids) expect(hooksOf(id)).toHaveLength(1);

    const failing = await system.api.req('POST', '/api/tasks/face-detection/batch', {
      headers: withKey(key),
      body: { tasks: [{ image_url: receiver.url('/images/missing.png'), callback_url: receiver.url('/hooks') }] },
    });
    expect(failing.status).toBe(201);
    const failedId = failing.body.data[0].public_id as string;
    expect(JSON.parse((await webhookFor(failedId)).body.toString())).toMatchObject({ status: 30, error_code: 'image_fetch_failed' });
    const listed = await system.api.req('GET', '/api/keys?type=paid', { headers: account.auth });
    // 3 images of 2 credits; the failed face detection was charged 1 and refunded by the worker.
    expect(listed.body.data.find((k: { id: string }) => k.id === key.id)).toMatchObject({ spend_limit: { credits: 100, period: 'day' }, spent: 6 });
  });

  it('failure on a trial key: an undecodable image → invalid_input, the grant quota is refunded', async () => {
    const grantId = await seedGrant(system.api, account, 5);
    const trialKey = await createKey(system.api, account, { type: 'trial', grant_id: grantId });
    const garbage = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), Buffer.alloc(200, 7)]);
    const publicId = await create('face-detection', { image_base64: garbage.toString('base64') }, trialKey);
    const task = await waitForTask(system.api, trialKey.plaintext, publicId);
    expect(task).toMatchObject({ status: 30, error_code: 'invalid_input', error_message: 'The image is not a valid PNG: it has no IHDR header.', result: null });
    const grants = (await system.api.req('GET', '/api/trial-grants', { headers: account.auth })).body.data as Array<{ id: string; quota_remaining: number }>;
    expect(grants.find((g) => g.id === grantId)?.quota_remaining).toBe(5);
  });

  it('worker and dispatcher serve /healthz, /readyz and Prometheus metrics on OPS_PORT', async () => {
    // The worker also needs the file store; the dispatcher does not touch it.
    for (const [service, checks] of [
      [worker, { database: 'ok', redis: 'ok', storage: 'ok' }],
      [dispatcher, { database: 'ok', redis: 'ok' }],
    ] as const) {
      expect((await fetch(`${service.opsUrl}/healthz`)).status).toBe(200);
      const ready = await fetch(`${service.opsUrl}/readyz`);
      expect(await ready.json()).toEqual({ status: 'ready', checks });
      expect((await fetch(`${service.opsUrl}/nothing`)).status).toBe(404);
    }
    const metric = (text: string, name: string) => Number(new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    const workerMetrics = await (await fetch(`${worker.opsUrl}/metrics`)).text();
    expect(metric(workerMetrics, 'taskapi_worker_task_runs_total{kind="image-generation",outcome="completed"}')).toBeGreaterThanOrEqual(1);
    expect(metric(workerMetrics, 'taskapi_worker_task_runs_total{kind="face-detection",outcome="failed"}')).toBeGreaterThanOrEqual(2);
    expect(workerMetrics).toContain('taskapi_worker_task_run_seconds_bucket');
    const dispatcherMetrics = await (await fetch(`${dispatcher.opsUrl}/metrics`)).text();
    expect(metric(dispatcherMetrics, 'taskapi_webhook_attempts_total{outcome="succeeded"}')).toBeGreaterThanOrEqual(4);
  });
});
