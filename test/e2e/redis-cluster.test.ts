// The whole system on a local 3-master Redis Cluster (REDIS_CLUSTER_NODES): BullMQ queues, workers
// and the dispatcher, the rate-limit script, revocation pub/sub across two API replicas, sessions
// and the login throttle (every `seedAccount` logs in), the queue-signal scrape and Bull Board.
// The cluster is this file's own, so nothing else needs isolating on it.
import fs from 'node:fs';
import path from 'node:path';
import { Cluster } from 'ioredis';
import { TASK_QUEUES, WEBHOOK_QUEUE } from '@taskapi/queue';
import { startHttpsReceiver, startRedisCluster, waitFor, type HttpsReceiver, type LocalRedisCluster, type ReceiverReply } from '@taskapi/testing';
import { revokedMarkerKey } from '../../services/api/src/domain/key-revocation';
import { createKey, seedAccount, seedGrant, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from '../../services/api/test/support/harness';
import { startDispatcher, startWorker, systemEnv, type RunningService } from './support/system';
import { deliveriesOf, ledgerOf, waitForTask } from './support/tasks';

const fixture = (name: string) => fs.readFileSync(path.join(__dirname, '../fixtures', name));
const ADMIN = { ADMIN_USER: 'ops', ADMIN_PASSWORD: 'cluster board' };
const basicAuth = { authorization: `Basic ${Buffer.from('ops:cluster board').toString('base64')}` };

describe('on a Redis Cluster', () => {
  let cluster: LocalRedisCluster;
  let a: TestApi;
  let b: TestApi;
  let worker: RunningService;
  let dispatcher: RunningService;
  let receiver: HttpsReceiver;
  let account: TestAccount;
  let paidKey: CreatedKey;
  const scripts = new Map<string, (nth: number) => ReceiverReply>();

  beforeAll(async () => {
    cluster = await startRedisCluster();
    receiver = await startHttpsReceiver((req, nth) => scripts.get(req.path)?.(nth) ?? 204);
    // REDIS_URL's database is ignored on a cluster (it has only database 0).
    const env = systemEnv(0, { REDIS_CLUSTER_NODES: cluster.nodes, WEBHOOK_RETRY_DELAYS_MS: '300,600', WEBHOOK_TIMEOUT_MS: '2000', ...ADMIN });
    [a, b] = await Promise.all([startApi(env), startApi(env)]);
    [worker, dispatcher] = await Promise.all([startWorker(env), startDispatcher(env)]);
    account = await seedAccount(a, { credits: 1000 });
    paidKey = await createKey(a, account, { type: 'paid' });
  }, 60_000);

  afterAll(async () => {
    await Promise.all([worker?.stop(), dispatcher?.stop()]);
    await Promise.all([a?.close(), b?.close()]);
    await receiver?.close();
    await cluster?.stop();
  });

  async function create(api: TestApi, kind: string, body: Record<string, unknown>): Promise<string> {
    const res = await api.req('POST', `/api/tasks/${kind}`, { headers: withKey(paidKey), body });
    if (res.status !== 201) throw new Error(`${kind}: ${res.status} ${res.text}`);
    return res.body.public_id as string;
  }

  const hooksOf = (route: string, publicId: string) =>
    receiver.at(route).filter((r) => (JSON.parse(r.body.toString()) as { public_id: string }).public_id === publicId);

  it('every connection of the API is a cluster client spread over the masters', async () => {
    for (const client of [a.deps.redis, a.deps.subscriber, a.deps.queueRedis]) expect(client).toBeInstanceOf(Cluster);
    const masters = (a.deps.redis as Cluster).nodes('master');
    expect(masters.map((n) => n.options.port).sort()).toEqual([...cluster.ports].sort());
  });

  it('every task kind runs end to end (created on one replica, read on the other) with a webhook each', async () => {
    const ids = {
      image: await create(a, 'image-generation', { prompt: 'a lighthouse', width: 64, height: 64, callback_url: receiver.url('/hooks') }),
      video: await create(b, 'video-generation', { prompt: 'clouds', duration_seconds: 1, callback_url: receiver.url('/hooks') }),
      face: await create(a, 'face-detection', { image_base64: fixture('astronaut.png').toString('base64'), callback_url: receiver.url('/hooks') }),
    };
    for (const publicId of Object.values(ids)) {
      const task = await waitForTask(b, paidKey.plaintext, publicId, [20, 30, 40], 60_000);
      expect(task.status).toBe(20);
      const [hook] = await waitFor(() => hooksOf('/hooks', publicId).length === 1 && hooksOf('/hooks', publicId), {
        timeoutMs: 20_000,
        what: `the webhook of ${publicId}`,
      });
      expect(JSON.parse(hook!.body.toString())).toMatchObject({ public_id: publicId, status: 20 });
      expect(await ledgerOf(a, publicId)).toEqual([{ entry_type: 'charge', amount: expect.any(Number) }]);
    }
    const face = await waitForTask(a, paidKey.plaintext, ids.face);
    expect(face.result.face_coordinates).toHaveLength(1);
    const image = await waitForTask(a, paidKey.plaintext, ids.image);
    const file = await fetch(image.files[0].url);
    expect(file.status).toBe(200);
    expect(Buffer.from(await file.arrayBuffer()).subarray(1, 4).toString()).toBe('PNG');
  }, 120_000);

  it('webhook retries: a receiver answering 500 then 200 gets exactly two attempts', async () => {
    scripts.set('/flaky', (nth) => (nth === 1 ? { status: 500, body: 'try later' } : 200));
    const publicId = await create(a, 'image-generation', { prompt: 'retry me', width: 64, height: 64, callback_url: receiver.url('/flaky') });
    const [delivery] = await waitFor(
      async () => {
        const rows = await deliveriesOf(a, publicId);
        return rows[0]?.state === 'succeeded' && rows;
      },
      { timeoutMs: 30_000, intervalMs: 50, what: 'the flaky delivery to succeed' },
    );
    expect(delivery!.attempt_count).toBe(2);
    const hooks = hooksOf('/flaky', publicId);
    expect(hooks.map((h) => h.headers['x-webhook-attempt'])).toEqual(['1', '2']);
    expect(hooks[1]!.headers['webhook-id']).toBe(hooks[0]!.headers['webhook-id']);
  }, 60_000);

  it('rate limits are exact under a concurrent burst spread over two replicas', async () => {
    const trial = await seedAccount(a);
    const key = await createKey(a, trial, { type: 'trial', grant_id: await seedGrant(a, trial, 100) });
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => (i % 2 ? a : b).req('GET', '/api/tasks', { headers: withKey(key) })));
    expect(results.filter((r) => r.status === 200)).toHaveLength(20);
    expect(results.filter((r) => r.status === 429)).toHaveLength(30);
  });

  it('a key revoked through one replica is refused by the other on the next request, and pub/sub evicts it', async () => {
    const owner = await seedAccount(b);
    const key = await createKey(b, owner, { type: 'paid' });
    for (const replica of [a, b]) expect((await replica.req('GET', '/api/tasks', { headers: withKey(key) })).status).toBe(200);
    expect((await a.req('POST', `/api/keys/${key.id}/revoke`, { headers: owner.auth })).status).toBe(200);
    const next = await b.req('GET', '/api/tasks', { headers: withKey(key) });
    expect(next.status).toBe(401);
    expect(next.body).toEqual({ message: 'Invalid API key.' });

    // Without the marker only B's cache decides: the message published on the cluster evicts it
    // (a cache that missed it would accept the key for a minute).
    await waitFor(
      async () => {
        await a.deps.redis.del(revokedMarkerKey(owner.id, key.id));
        return (await b.req('GET', '/api/tasks', { headers: withKey(key) })).status === 401;
      },
      { timeoutMs: 3_000, what: 'replica B to drop the revoked key' },
    );
  });

  it('Prefer: wait is woken by the terminal event published on the cluster, on either replica', async () => {
    const publicId = await create(a, 'face-detection', { image_base64: fixture('astronaut.png').toString('base64') });
    const started = Date.now();
    const [onB, created] = await Promise.all([
      b.req('GET', `/api/tasks/${publicId}`, { headers: { ...withKey(paidKey), prefer: 'wait=30' } }),
      a.req('POST', '/api/tasks/image-generation', { headers: { ...withKey(paidKey), prefer: 'wait=30' }, body: { prompt: 'p', width: 64, height: 64 } }),
    ]);
    expect(onB.body.status).toBe(20);
    expect(onB.headers.get('preference-applied')).toBe('wait=30');
    expect(created.status).toBe(201);
    expect(created.body.status).toBe(20);
    expect(created.headers.get('preference-applied')).toBe('wait=30');
    expect(Date.now() - started).toBeLessThan(25_000);
  });

  it('a task event stream on one replica follows a task run from the other, to its terminal event', async () => {
    const publicId = await create(a, 'video-generation', { prompt: 'cluster stream', duration_seconds: 1 });
    const res = await fetch(`${b.url}/api/tasks/${publicId}/events`, { headers: withKey(paidKey) });
    expect(res.status).toBe(200);
    // The server closes the stream after the terminal event.
    const text = await res.text();
    const tasks = text
      .split('\n\n')
      .filter((e) => e.startsWith('event: task\n'))
      .map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)) as { status: number; progress: number | null });
    expect(tasks.at(-1)).toMatchObject({ status: 20, progress: 1 });
    expect(tasks.some((t) => t.status === 10)).toBe(true);
  });

  it('a console session ends on logout on every replica', async () => {
    const user = await seedAccount(a);
    expect((await b.req('GET', '/api/credits/balance', { headers: user.auth })).status).toBe(200);
    expect((await a.req('POST', '/api/auth/logout', { headers: user.auth })).status).toBeLessThan(300);
    expect((await b.req('GET', '/api/credits/balance', { headers: user.auth })).status).toBe(401);
  });

  it('Bull Board lists every queue, and /metrics reads the queue signals from the cluster', async () => {
    const queues = await a.req('GET', '/admin/queues/api/queues', { headers: basicAuth });
    expect(queues.status).toBe(200);
    const names = (queues.body.queues as Array<{ name: string }>).map((q) => q.name).sort();
    // Each kind's queue and, beside it, its accounts' lines (read from the scheduler on the cluster).
    expect(names).toEqual([...Object.values(TASK_QUEUES).map((q) => q.name), ...Object.keys(TASK_QUEUES).map((kind) => `{lines-${kind}}`), WEBHOOK_QUEUE.name].sort());

    const metrics = await (await fetch(`${b.url}/metrics`)).text();
    for (const name of Object.keys(TASK_QUEUES)) expect(metrics).toMatch(new RegExp(`^taskapi_queue_depth\\{kind="${name}"\\} 0$`, 'm'));
  });
});
