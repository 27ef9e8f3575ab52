// The dispatcher's delivery rules against a real HTTPS receiver: retries on the configured
// schedule, give-up after the last retry, signing at send time across a secret rotation,
// redirects not followed, no webhook for cancelled tasks, the delivery log and manual resend.
import { Webhook } from 'standardwebhooks';
import { webhookSignature } from '@taskapi/crypto';
import { deliveryJobId } from '@taskapi/queue';
import { startHttpsReceiver, waitFor, type HttpsReceiver, type ReceivedRequest, type ReceiverReply } from '@taskapi/testing';
import { createKey, seedAccount, withKey, type CreatedKey, type TestAccount } from '../../services/api/test/support/harness';
import { startDispatcher, startSystem, startWorker, type Running, type TestSystem } from './support/system';
import { deliveriesOf, ledgerOf, waitForTask } from './support/tasks';

const REDIS_DB = 11;
const DELAYS = [300, 600, 900, 1200, 1500];

describe('webhook delivery', () => {
  let system: TestSystem;
  let worker: Running;
  let dispatcher: Running;
  let receiver: HttpsReceiver;
  let account: TestAccount;
  let key: CreatedKey;
  const scripts = new Map<string, (nth: number, req: ReceivedRequest) => ReceiverReply | Promise<ReceiverReply>>();

  beforeAll(async () => {
    system = await startSystem(REDIS_DB, { WEBHOOK_RETRY_DELAYS_MS: DELAYS.join(','), WEBHOOK_TIMEOUT_MS: '2000', WORKER_KINDS: 'image-generation' });
    receiver = await startHttpsReceiver((req, nth) => scripts.get(req.path)?.(nth, req) ?? 204);
    [worker, dispatcher] = await Promise.all([startWorker(system.env), startDispatcher(system.env)]);
    account = await seedAccount(system.api, { credits: 1000 });
    key = await createKey(system.api, account, { type: 'paid' });
  });

  afterAll(async () => {
    await Promise.all([worker?.stop(), dispatcher?.stop()]);
    await receiver?.close();
    await system?.stop();
  });

  async function imageTask(path: string): Promise<string> {
    const res = await system.api.req('POST', '/api/tasks/image-generation', {
      headers: withKey(key),
      body: { prompt: `hook ${path}`, width: 64, height: 64, callback_url: receiver.url(path) },
    });
    expect(res.status).toBe(201);
    return res.body.public_id;
  }

  async function deliveryLog(publicId: string): Promise<any> {
    const res = await system.api.req('GET', `/api/webhook-deliveries?public_id=${publicId}`, { headers: account.auth });
    expect(res.status).toBe(200);
    return res.body.data[0];
  }

  const waitForState = (publicId: string, state: string, timeoutMs = 20_000) =>
    waitFor(async () => {
      const d = await deliveryLog(publicId);
      return d?.state === state ? d : undefined;
    }, { timeoutMs, intervalMs: 50, what: `delivery of ${publicId} to be ${state}` });

  const noJobFor = async (deliveryId: string, attempt: number) =>
    expect(await system.api.deps.webhooks.queue.getJobState(deliveryJobId(deliveryId, attempt))).toBe('unknown');

  it('500, 500, 200 → exactly three attempts, spaced by the configured delays, same webhook-id', async () => {
    scripts.set('/scripted', (nth) => (nth <= 2 ? { status: 500, body: 'try later' } : 200));
    const publicId = await imageTask('/scripted');
    const delivery = await waitForState(publicId, 'succeeded');
    const hooks = receiver.at('/scripted');
    expect(hooks).toHaveLength(3);
    expect(hooks.map((h) => h.headers['x-webhook-attempt'])).toEqual(['1', '2', '3']);
    expect(new Set(hooks.map((h) => h.headers['webhook-id']))).toEqual(new Set([delivery.id]));
    expect(hooks[1]!.receivedAt - hooks[0]!.receivedAt).toBeGreaterThanOrEqual(DELAYS[0]!);
    expect(hooks[2]!.receivedAt - hooks[1]!.receivedAt).toBeGreaterThanOrEqual(DELAYS[1]!);
    expect(delivery).toMatchObject({ public_id: publicId, url: receiver.url('/scripted'), task_status: 20, attempt_count: 3, next_attempt_at: null });
    expect(delivery.completed_at).toEqual(expect.any(String));
    expect(delivery.attempts.map((a: any) => [a.attempt_number, a.status_code, a.error])).toEqual([
      [1, 500, 'HTTP 500'],
      [2, 500, 'HTTP 500'],
      [3, 200, null],
    ]);
    expect(delivery.attempts[0].response_excerpt).toBe('try later');
    expect(delivery.attempts[0].duration_ms).toEqual(expect.any(Number));
    await noJobFor(delivery.id, 4);
  });

  it('a receiver that always fails gets exactly six attempts, then the delivery is given up', async () => {
    scripts.set('/down', () => 503);
    const publicId = await imageTask('/down');
    const delivery = await waitForState(publicId, 'failed');
    expect(receiver.at('/down')).toHaveLength(6);
    expect(delivery.attempts.map((a: any) => a.status_code)).toEqual([503, 503, 503, 503, 503, 503]);
    expect(delivery.next_attempt_at).toBeNull();
    await noJobFor(delivery.id, 7);
    // The task itself stays completed; only the notification failed.
    expect((await waitForTask(system.api, key.plaintext, publicId)).status).toBe(20);
  });

  it('a rotation between attempts: later attempts verify with the new secret only', async () => {
    const oldSecret = (await system.api.req('GET', '/api/webhook-secret', { headers: account.auth })).body.webhook_secret as string;
    let newSecret = '';
    scripts.set('/rotate', async (nth) => {
      if (nth === 1) {
        newSecret = (await system.api.req('POST', '/api/webhook-secret/rotate', { headers: account.auth })).body.webhook_secret;
        return 500;
      }
      return 200;
    });
    const publicId = await imageTask('/rotate');
    await waitForState(publicId, 'succeeded');
    const [first, second] = receiver.at('/rotate');
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(oldSecret);
    expect(first!.headers['x-signature']).toBe(webhookSignature(oldSecret, first!.body));
    expect(second!.headers['x-signature']).toBe(webhookSignature(newSecret, second!.body));
    expect(second!.headers['x-signature']).not.toBe(webhookSignature(oldSecret, second!.body));
    expect(() => new Webhook(newSecret).verify(second!.body.toString(), second!.headers as Record<string, string>)).not.toThrow();
    expect(() => new Webhook(oldSecret).verify(second!.body.toString(), second!.headers as Record<string, string>)).toThrow();
  });

  it('an answer full of NUL bytes is recorded like any other (the excerpt keeps what text can hold)', async () => {
    scripts.set('/nul', (nth) => (nth === 1 ? { status: 500, body: Buffer.from('bad\u0000\u0000news \u00ff') } : 200));
    const publicId = await imageTask('/nul');
    const delivery = await waitForState(publicId, 'succeeded');
    expect(delivery.attempts.map((a: any) => [a.status_code, a.response_excerpt])).toEqual([
      [500, 'bad\uFFFD\uFFFDnews \u00ff'],
      [200, null],
    ]);
  });

  it('redirects are not followed: a 302 is a failed attempt', async () => {
    scripts.set('/moved', (nth) => (nth === 1 ? { status: 302, headers: { location: receiver.url('/elsewhere') } } : 200));
    const publicId = await imageTask('/moved');
    const delivery = await waitForState(publicId, 'succeeded');
    expect(delivery.attempts.map((a: any) => [a.status_code, a.error])).toEqual([
      [302, 'HTTP 302'],
      [200, null],
    ]);
    expect(receiver.at('/elsewhere')).toHaveLength(0);
  });

  it('a cancelled task never sends a webhook, even after a worker picks up its job', async () => {
    scripts.set('/cancelled', () => 200);
    // No worker here runs video: the task stays queued until it is cancelled.
    const created = await system.api.req('POST', '/api/tasks/video-generation', {
      headers: withKey(key),
      body: { prompt: 'never', duration_seconds: 1, callback_url: receiver.url('/cancelled') },
    });
    const publicId = created.body.public_id as string;
    const cancelled = await system.api.req('POST', `/api/tasks/${publicId}/cancel`, { headers: withKey(key) });
    expect(cancelled.body.status).toBe(40);
    const videoQueue = system.api.deps.taskQueues.queues['video-generation'];
    expect(await videoQueue.getJobState(publicId)).toBe('unknown'); // the API dropped the released job
    // Dropping is best effort (a job can be running, or be enqueued again by a sweeper): a worker
    // that gets the job anyway must skip it.
    await system.api.deps.taskQueues.addRuns('video-generation', [{ publicId, accountId: account.id, release: 1 }]);
    const videoWorker = await startWorker({ ...system.env, WORKER_KINDS: 'video-generation' });
    try {
      await waitFor(async () => (await videoQueue.getJobState(publicId)) === 'completed', {
        what: 'the cancelled task job to be skipped',
      });
    } finally {
      await videoWorker.stop();
    }
    expect(await deliveriesOf(system.api, publicId)).toEqual([]);
    expect(receiver.at('/cancelled')).toHaveLength(0);
    expect((await waitForTask(system.api, key.plaintext, publicId)).status).toBe(40);
    expect(await ledgerOf(system.api, publicId)).toEqual([
      { entry_type: 'charge', amount: -10 },
      { entry_type: 'refund', amount: 10 },
    ]);
  });

  it('resend: one more attempt of the same series; refused while pending; session only', async () => {
    scripts.set('/resend', () => 200);
    const publicId = await imageTask('/resend');
    const delivery = await waitForState(publicId, 'succeeded');
    const resent = await system.api.req('POST', `/api/webhook-deliveries/${delivery.id}/resend`, { headers: account.auth });
    expect(resent.status).toBe(202);
    expect(resent.body.delivery).toMatchObject({ id: delivery.id, state: 'pending', attempt_count: 1 });
    const hooks = await receiver.waitForCount('/resend', 2);
    expect(hooks[1]!.headers['webhook-id']).toBe(delivery.id);
    expect(hooks[1]!.headers['x-webhook-attempt']).toBe('2');
    expect(hooks[1]!.body.equals(hooks[0]!.body)).toBe(true);
    expect((await waitForState(publicId, 'succeeded')).attempt_count).toBe(2);

    scripts.set('/pending', () => 500);
    const pendingTask = await imageTask('/pending');
    const pending = await waitFor(async () => {
      const d = await deliveryLog(pendingTask);
      return d?.attempt_count >= 1 ? d : undefined;
    });
    const refused = await system.api.req('POST', `/api/webhook-deliveries/${pending.id}/resend`, { headers: account.auth });
    expect(refused.status).toBe(409);
    expect(refused.body.message).toBe('Delivery is still pending; wait for its next attempt or for it to finish.');

    const unknown = await system.api.req('POST', `/api/webhook-deliveries/whd_${'x'.repeat(22)}/resend`, { headers: account.auth });
    expect(unknown.status).toBe(404);
    expect(unknown.body.message).toBe('Delivery not found.');
    const other = await seedAccount(system.api);
    expect((await system.api.req('POST', `/api/webhook-deliveries/${delivery.id}/resend`, { headers: other.auth })).status).toBe(404);
    expect((await system.api.req('GET', `/api/webhook-deliveries?public_id=${publicId}`, { headers: other.auth })).body.data).toEqual([]);
    const withApiKey = await system.api.req('GET', '/api/webhook-deliveries', { headers: withKey(key) });
    expect(withApiKey.status).toBe(401);
    expect(withApiKey.body.message).toBe('This endpoint requires a login session. API keys are not accepted.');
    expect((await system.api.req('GET', '/api/webhook-deliveries?limit=0', { headers: account.auth })).status).toBe(400);
  });

  it('a secret that no longer decrypts never takes an attempt number, even while the dispatcher holds the old one', async () => {
    // The dispatcher decrypted this account's secret for the tests above and keeps it (with the
    // ciphertext it came from); the stored ciphertext now changes to one that cannot be decrypted.
    const pool = system.api.deps.db.pool;
    const { rows } = await pool.query<{ c: string }>('SELECT webhook_secret_ciphertext AS c FROM accounts WHERE id = $1', [account.id]);
    const original = rows[0]!.c;
    const [version, data] = original.split('.');
    const tampered = `${version}.${Buffer.from(Buffer.from(data!, 'base64url').map((b, i) => (i === 20 ? b ^ 1 : b))).toString('base64url')}`;
    await pool.query('UPDATE accounts SET webhook_secret_ciphertext = $2 WHERE id = $1', [account.id, tampered]);
    try {
      scripts.set('/undecryptable', () => 200);
      const publicId = await imageTask('/undecryptable');
      await waitForTask(system.api, key.plaintext, publicId, [20]);
      const [delivery] = await waitFor(async () => {
        const ds = await deliveriesOf(system.api, publicId);
        return ds.length ? ds : undefined;
      });
      // The job fails (every BullMQ attempt of it) without claiming a number or sending anything.
      await waitFor(async () => (await system.api.deps.webhooks.queue.getJobState(deliveryJobId(delivery!.id, 1))) === 'failed' || undefined, {
        timeoutMs: 20_000,
        what: 'the attempt job to fail',
      });
      expect((await deliveriesOf(system.api, publicId))[0]).toMatchObject({ state: 'pending', attempt_count: 0 });
      const attempts = await pool.query('SELECT 1 FROM webhook_attempts WHERE delivery_id = $1', [delivery!.id]);
      expect(attempts.rowCount).toBe(0);
      expect(receiver.at('/undecryptable')).toHaveLength(0);
    } finally {
      await pool.query('UPDATE accounts SET webhook_secret_ciphertext = $2 WHERE id = $1', [account.id, original]);
    }
  });
});
