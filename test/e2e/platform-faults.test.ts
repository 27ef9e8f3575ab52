// Faults the platform owns never fail a task (docs/high-availability.md): a run interrupted by
// PostgreSQL being unreachable is handed back, or waits, without spending an attempt, and carries
// on once PostgreSQL answers. The worker reaches PostgreSQL through a TCP relay the test cuts (the
// API keeps its own connection, so the test can read throughout); the task runs on a Cog model the
// test holds, so each outage lands exactly where it is meant to. Before this, each outage at a
// run's end cost an attempt (and a second prediction on the model), and three of them failed the
// task with internal_error.
import { predictionId } from '@taskapi/domain';
import { recreateDatabase, startPrivateRedis, startTcpRelay, testDatabaseUrl, waitFor, type PrivateRedis, type TcpRelay } from '@taskapi/testing';
import { createKey, seedAccount, withKey, type CreatedKey, type TestAccount } from '../../services/api/test/support/harness';
import { startHeldCogServer, type HeldCogServer } from './support/held-model';
import { startSystem, startWorker, type RunningService, type TestSystem } from './support/system';
import { ledgerOf, waitForTask } from './support/tasks';

const DATABASE_URL = testDatabaseUrl('platform_faults');

describe('faults the platform owns', () => {
  let redis: PrivateRedis;
  let relay: TcpRelay;
  let system: TestSystem;
  let cog: HeldCogServer;
  let worker: RunningService;
  let account: TestAccount;
  let key: CreatedKey;

  beforeAll(async () => {
    await recreateDatabase(DATABASE_URL);
    redis = await startPrivateRedis();
    const target = new URL(DATABASE_URL);
    relay = await startTcpRelay(target.hostname, Number(target.port || 5432));
    system = await startSystem(0, { DATABASE_URL, REDIS_URL: `${redis.url}/0` });
    cog = await startHeldCogServer({ streaming: true });
    const viaRelay = new URL(DATABASE_URL);
    viaRelay.hostname = '127.0.0.1';
    viaRelay.port = String(relay.port);
    worker = await startWorker({
      ...system.env,
      DATABASE_URL: viaRelay.toString(),
      WORKER_KINDS: 'video-generation',
      ENGINE_VIDEO: 'cog',
      COG_URL_VIDEO: cog.url,
      COG_WEBHOOK_BASE_URL: system.api.url,
      TASK_RETRY_BACKOFF_MS: '100',
    });
    account = await seedAccount(system.api, { credits: 1_000 });
    key = await createKey(system.api, account, { type: 'paid' });
  });

  afterAll(async () => {
    relay?.restore();
    await worker?.stop();
    await cog?.close();
    await system?.stop();
    await relay?.close();
    await redis?.stop();
  });

  const create = async () => {
    const res = await system.api.req('POST', '/api/tasks/video-generation', { headers: withKey(key), body: { prompt: 'through the outages', duration_seconds: 1 } });
    expect(res.status).toBe(201);
    return res.body.public_id as string;
  };
  const row = async (publicId: string) =>
    (await system.api.deps.db.pool.query<{ status: number; attempts: number }>('SELECT status, attempts FROM tasks WHERE public_id = $1', [publicId])).rows[0]!;
  /** Cuts the worker off PostgreSQL for `ms` (connections refused, as when the server is down). */
  const outage = async (ms: number) => {
    relay.cut('refuse');
    await new Promise((resolve) => setTimeout(resolve, ms));
    relay.restore();
  };

  it('outages at the claim, in the middle of the run and at its end cost the task nothing', async () => {
    const queue = system.api.deps.taskQueues.queues['video-generation'];
    // 1. The claim meets the outage: the worker holds the job and waits for PostgreSQL.
    relay.cut('refuse');
    const publicId = await create();
    const id = predictionId(publicId, 1);
    await waitFor(async () => (await (await queue.getJob(publicId))?.isActive()) === true, { what: 'the worker to take the job' });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await row(publicId)).toEqual({ status: 0, attempts: 0 });
    relay.restore();
    await cog.waitForHeld(id);
    expect(await row(publicId)).toEqual({ status: 10, attempts: 1 });
    // 2. An outage while the model works.
    await outage(1_000);
    // 3. The prediction succeeds while PostgreSQL is down: the run holds its result until the
    // commit goes through.
    relay.cut('refuse');
    cog.held.release(id);
    await waitFor(() => cog.predictions().find((p) => p.id === id)?.status === 'succeeded', { what: 'the prediction to succeed' });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(await row(publicId)).toEqual({ status: 10, attempts: 1 });
    relay.restore();
    const task = await waitForTask(system.api, key.plaintext, publicId);
    expect(task).toMatchObject({ status: 20, error_code: null, files: [expect.objectContaining({ name: 'video.gif' })] });
    expect(await row(publicId)).toEqual({ status: 20, attempts: 1 });
    // One prediction, never a second for the same task; one charge, no refund.
    expect(cog.predictions().filter((p) => p.id.startsWith(publicId)).map((p) => p.id)).toEqual([id]);
    expect((await ledgerOf(system.api, publicId)).map((l) => l.entry_type)).toEqual(['charge']);
  });
});
