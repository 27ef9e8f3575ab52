// Losing Redis (FLUSHDB of the system's Redis database: everything BullMQ held) must not lose a
// task or a webhook: the sweepers re-enqueue what PostgreSQL says is pending. This file uses its
// own PostgreSQL database, so its sweepers see only its own tasks.
import fs from 'node:fs';
import path from 'node:path';
import { recreateDatabase, startHttpsReceiver, testDatabaseUrl, waitFor, type HttpsReceiver } from '@taskapi/testing';
import { createKey, seedAccount, withKey, type CreatedKey, type TestAccount } from '../../services/api/test/support/harness';
import { sweepDeliveries } from '../../services/webhook-dispatcher/src/domain/sweep-deliveries';
import { createTaskLifecycle } from '@taskapi/task-lifecycle';
import { createLogger } from '@taskapi/logger';
import { flushRedis, startDispatcher, startSystem, startWorker, type Running, type TestSystem } from './support/system';
import { deliveriesOf, waitForTask } from './support/tasks';

const REDIS_DB = 10;
const DATABASE_URL = testDatabaseUrl('redis_loss');

describe('Redis loss', () => {
  let system: TestSystem;
  let receiver: HttpsReceiver;
  let account: TestAccount;
  let key: CreatedKey;
  const running: Running[] = [];

  beforeAll(async () => {
    await recreateDatabase(DATABASE_URL);
    system = await startSystem(REDIS_DB, { DATABASE_URL, SWEEPER_INTERVAL_MS: '500' });
    receiver = await startHttpsReceiver(() => 204);
    account = await seedAccount(system.api, { credits: 1000 });
    key = await createKey(system.api, account, { type: 'paid' });
  });

  const flush = () => flushRedis(system.env.REDIS_URL!);

  afterAll(async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
    await receiver?.close();
    await system?.stop();
  });

  async function create(kind: string, body: Record<string, unknown>): Promise<string> {
    const res = await system.api.req('POST', `/api/tasks/${kind}`, { headers: withKey(key), body: { ...body, callback_url: receiver.url('/hooks') } });
    expect(res.status).toBe(201);
    return res.body.public_id;
  }

  it('after FLUSHDB, every queued task and every pending delivery is recovered, each webhook sent once', async () => {
    // Phase 1: tasks completed while no dispatcher runs, so their deliveries wait in the queue.
    const worker = await startWorker(system.env);
    const finished = await Promise.all([1, 2, 3].map((i) => create('image-generation', { prompt: `done ${i}`, width: 64, height: 64 })));
    for (const id of finished) expect((await waitForTask(system.api, key.plaintext, id)).status).toBe(20);
    await worker.stop();
    for (const id of finished) expect((await deliveriesOf(system.api, id))[0]?.state).toBe('pending');

    // Phase 2: tasks queued while no worker runs.
    const queued = [
      await create('image-generation', { prompt: 'queued a', width: 64, height: 64 }),
      await create('image-generation', { prompt: 'queued b', width: 64, height: 64 }),
      await create('video-generation', { prompt: 'queued c', duration_seconds: 1 }),
      await create('face-detection', { image_base64: fs.readFileSync(path.join(__dirname, '../fixtures/astronaut.png')).toString('base64') }),
    ];
    expect(await system.api.deps.webhooks.queue.count()).toBe(3);

    // Phase 3: Redis forgets everything.
    await flush();
    expect(await system.api.deps.webhooks.queue.count()).toBe(0);
    expect(await system.api.deps.taskQueues.queues['image-generation'].count()).toBe(0);

    // Phase 4: services come back; the sweepers rebuild the queues from the database.
    running.push(await startWorker(system.env), await startDispatcher(system.env));
    const all = [...finished, ...queued];
    for (const id of queued) expect((await waitForTask(system.api, key.plaintext, id)).status).toBe(20);
    await waitFor(
      async () => {
        const states = await Promise.all(all.map(async (id) => (await deliveriesOf(system.api, id))[0]?.state));
        return states.every((s) => s === 'succeeded');
      },
      { timeoutMs: 30_000, what: 'every delivery to succeed' },
    );
    const announced = receiver.at('/hooks').map((r) => JSON.parse(r.body.toString()).public_id as string);
    expect(announced.sort()).toEqual([...all].sort());
  });

  it('a sweep walks the whole backlog page by page, so live jobs never hide missing ones', async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
    const { api } = system;
    // Deliveries waiting for a dispatcher, and tasks waiting for a worker.
    const worker = await startWorker(system.env);
    const done = await Promise.all([1, 2, 3].map((i) => create('image-generation', { prompt: `page ${i}`, width: 64, height: 64 })));
    for (const id of done) await waitForTask(api, key.plaintext, id);
    await worker.stop();
    const queued = await Promise.all([1, 2, 3, 4, 5].map((i) => create('image-generation', { prompt: `backlog ${i}`, width: 64, height: 64 })));
    await flush();

    // The worker's sweeper, on the API's connections (pages of 2, so paging is exercised too).
    const sweeper = createTaskLifecycle({
      config: system.api.deps.config,
      db: api.deps.db.pool,
      redis: api.deps.redis,
      schedulerRedis: api.deps.queueRedis,
      taskQueues: api.deps.taskQueues,
      webhooks: api.deps.webhooks,
      logger: createLogger({ service: 'sweep', level: 'silent' }),
    }).repair;
    expect(await sweeper.sweep('image-generation', 0, 2)).toEqual({ requeued: 5, failed: 0, released: 0 });
    // Every task is back with the scheduler, in its account's line (no worker runs to take them).
    const records = await api.deps.taskLifecycle.queueFigures.lookup(queued);
    expect(queued.map((id) => records.get(id)?.state)).toEqual(queued.map(() => 'pending'));
    expect((await api.deps.taskLifecycle.queueFigures.accountLoad(account.id)).waiting).toBe(5);
    // A second sweep finds everything in place.
    expect(await sweeper.sweep('image-generation', 0, 2)).toEqual({ requeued: 0, failed: 0, released: 0 });

    expect(await sweepDeliveries(api.deps.db.pool, api.deps.webhooks, 0, 2)).toBe(3);
    expect(await api.deps.webhooks.queue.getWaitingCount()).toBe(3);
    expect(await sweepDeliveries(api.deps.db.pool, api.deps.webhooks, 0, 2)).toBe(0);
  });
});
