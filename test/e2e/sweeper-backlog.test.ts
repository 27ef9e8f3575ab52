// The sweepers under a backlog: thousands of tasks waiting for a worker and deliveries waiting
// for the dispatcher, all older than the grace, a few of them without a job (lost by Redis). Each
// sweep must find exactly the missing ones, and its Redis work must not depend on where a job sits
// in its queue: BullMQ's getState looks for the id in the waiting list with LPOS (a scan), which
// made every sweep of a backlog of N jobs O(N²) in Redis. On a Redis server of its own, so that
// the server's command statistics are this test's alone.
import { Redis } from 'ioredis';
import pg from 'pg';
import { createLogger } from '@taskapi/logger';
import { closeQueues, createTaskQueues, createWebhookQueue, deliveryJobId, type TaskQueues, type WebhookQueue } from '@taskapi/queue';
import { recreateDatabase, startPrivateRedis, testDatabaseUrl, type PrivateRedis } from '@taskapi/testing';
import { sweepDeliveries } from '../../services/webhook-dispatcher/src/domain/sweep-deliveries';
import { FairScheduler } from '@taskapi/scheduler';
import { NO_PREDICTIONS, StatusMarkers, TaskLifecycle, TaskRows } from '@taskapi/task-lifecycle';

const DATABASE_URL = testDatabaseUrl('sweeper_backlog');
const BACKLOG = 3_000;
/** Every this many, the job is missing (Redis lost it). */
const MISSING_EVERY = 500;
const GRACE_MS = 60_000;

let server: PrivateRedis;
let redis: Redis;
let pool: pg.Pool;
let taskQueues: TaskQueues;
let webhooks: WebhookQueue;

async function commandStats(): Promise<Map<string, number>> {
  const info = await redis.info('commandstats');
  return new Map([...info.matchAll(/^cmdstat_([^:]+):calls=(\d+)/gm)].map((m) => [m[1]!, Number(m[2])]));
}

beforeAll(async () => {
  server = await startPrivateRedis();
  redis = new Redis(server.url, { maxRetriesPerRequest: null });
  await recreateDatabase(DATABASE_URL);
  pool = new pg.Pool({ connectionString: DATABASE_URL, max: 4 });
  taskQueues = createTaskQueues(redis);
  webhooks = createWebhookQueue(redis);
  await pool.query(`INSERT INTO accounts (id, email, password_hash, webhook_secret_ciphertext) VALUES ('acct_sweep', 'sweep@example.test', 'x', 'x')`);
  await pool.query(`INSERT INTO api_keys (id, account_id, type, key_hash, key_ciphertext, key_prefix) VALUES ('key_sweep', 'acct_sweep', 'paid', repeat('b', 64), 'x', 'sk-live-bbbbbbbb')`);
  // Queued an hour ago, oldest first by number; and as many completed tasks with a pending delivery.
  await pool.query(
    `INSERT INTO tasks (public_id, account_id, api_key_id, kind, status, input, callback_url, cost, created_at, finished_at)
     SELECT p.prefix || n, 'acct_sweep', 'key_sweep', 'image-generation', p.status, '{}', 'https://example.test/hook', 1,
            now() - interval '1 hour' + n * interval '1 ms', CASE WHEN p.status = 20 THEN now() - interval '1 hour' END
       FROM generate_series(1, $1::int) n, (VALUES ('task_sweep', 0::smallint), ('task_sweepdone', 20::smallint)) p(prefix, status)`,
    [BACKLOG],
  );
  await pool.query(
    `INSERT INTO webhook_deliveries (id, task_id, account_id, url, task_status, next_attempt_at)
     SELECT 'whd_sweep' || substr(public_id, 15), id, account_id, callback_url, 20, now() - interval '1 hour' + id * interval '1 ms'
       FROM tasks WHERE status = 20`,
  );
  const numbers = Array.from({ length: BACKLOG }, (_, i) => i + 1).filter((n) => n % MISSING_EVERY !== 0);
  // Jobs as releases before the scheduler queued them (the first release of each task).
  await taskQueues.addRuns('image-generation', numbers.map((n) => ({ publicId: `task_sweep${n}`, accountId: 'acct_sweep', release: 1 })));
  for (const n of numbers) await webhooks.enqueueAttempt(`whd_sweep${n}`, 1, 0, 'acct_sweep');
}, 120_000);

afterAll(async () => {
  if (taskQueues && webhooks) await closeQueues([...Object.values(taskQueues.queues), webhooks.queue]);
  redis?.disconnect();
  await pool?.end();
  await server?.stop();
});

const missingNumbers = Array.from({ length: BACKLOG / MISSING_EVERY }, (_, i) => (i + 1) * MISSING_EVERY);

it('the task sweeper gives back exactly the missing tasks of a waiting backlog, with no scan of the waiting list', async () => {
  expect(await taskQueues.queues['image-generation'].getWaitingCount()).toBe(BACKLOG - missingNumbers.length);
  await redis.config('RESETSTAT');
  const logger = createLogger({ service: 'test', level: 'silent' });
  const scheduler = new FairScheduler(redis, taskQueues, { defaultCap: 10 });
  const lifecycle = new TaskLifecycle({
    stores: { database: new TaskRows(pool), markers: new StatusMarkers(redis), scheduler, queues: taskQueues, webhooks, predictions: NO_PREDICTIONS },
    logger,
  });
  const result = await lifecycle.repair.sweep('image-generation', GRACE_MS);
  const stats = await commandStats();
  expect(result).toEqual({ requeued: missingNumbers.length, failed: 0, released: 0 });
  // The missing ones are back with the scheduler, in their account's line (no worker slot is idle
  // here to release them to).
  const records = await scheduler.lookup(missingNumbers.map((n) => `task_sweep${n}`));
  expect(missingNumbers.map((n) => records.get(`task_sweep${n}`)?.state)).toEqual(missingNumbers.map(() => 'pending'));
  expect((await scheduler.accountLoad('acct_sweep')).waiting).toBe(missingNumbers.length);
  expect(stats.get('lpos') ?? 0).toBe(0);
  // Constant work per task (today one hash read and two sorted-set lookups each): a bound that
  // holds whatever BullMQ does inside, as long as no call grows with the backlog.
  const calls = [...stats].filter(([name]) => name !== 'config' && name !== 'info').reduce((n, [, c]) => n + c, 0);
  expect(calls).toBeLessThanOrEqual(6 * BACKLOG);
});

it('the delivery sweeper re-adds exactly the missing jobs of a waiting backlog, with no scan of the waiting list', async () => {
  await redis.config('RESETSTAT');
  const requeued = await sweepDeliveries(pool, webhooks, GRACE_MS);
  const stats = await commandStats();
  expect(requeued).toBe(missingNumbers.length);
  expect(await webhooks.queue.getWaitingCount()).toBe(BACKLOG);
  for (const n of missingNumbers) expect(await webhooks.queue.getJob(deliveryJobId(`whd_sweep${n}`, 1))).toBeDefined();
  expect(stats.get('lpos') ?? 0).toBe(0);
});
