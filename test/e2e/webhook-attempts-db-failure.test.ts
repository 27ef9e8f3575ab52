// A PostgreSQL failure in the middle of a webhook attempt loses no attempt and reuses no number.
// The dispatcher reaches PostgreSQL through a TCP relay (never the shared server itself), which
// the receiver cuts while it holds attempt 1's answer; the API and the worker keep their direct
// connections, so the test can read the database throughout. This file uses its own PostgreSQL
// database, so the sweeper it runs sees only its own deliveries.
import { deliveryJobId } from '@taskapi/queue';
import {
  recreateDatabase,
  startHttpsReceiver,
  startTcpRelay,
  testDatabaseUrl,
  waitFor,
  type HttpsReceiver,
  type ReceiverReply,
  type TcpRelay,
} from '@taskapi/testing';
import { createKey, seedAccount, withKey, type CreatedKey, type TestAccount } from '../../services/api/test/support/harness';
import { claimAttempt } from '../../services/webhook-dispatcher/src/repositories/deliveries';
import { UNKNOWN_RESULT_ERROR } from '../../services/webhook-dispatcher/src/domain/send-attempt';
import { sweepDeliveries } from '../../services/webhook-dispatcher/src/domain/sweep-deliveries';
import { startDispatcher, startSystem, startWorker, type Running, type TestSystem } from './support/system';
import { deliveriesOf } from './support/tasks';

const REDIS_DB = 5;
const DELAYS = [300, 600, 900, 1200, 1500];
/** A claim older than any live run's request timeout plus recording time. */
const DEAD_CLAIM_TIME = () => new Date(Date.now() - 10 * 60_000);
const DATABASE_URL = testDatabaseUrl('webhook_attempts');

interface AttemptRow {
  attempt_number: number;
  status_code: number | null;
  error: string | null;
  in_flight: boolean;
}

describe('webhook attempts when PostgreSQL fails mid-attempt', () => {
  let relay: TcpRelay;
  let system: TestSystem;
  let worker: Running;
  let receiver: HttpsReceiver;
  let account: TestAccount;
  let key: CreatedKey;
  let dispatcher: Running | undefined;
  const scripts = new Map<string, (nth: number) => ReceiverReply>();

  beforeAll(async () => {
    await recreateDatabase(DATABASE_URL);
    const target = new URL(DATABASE_URL);
    relay = await startTcpRelay(target.hostname, Number(target.port || 5432));
    system = await startSystem(REDIS_DB, { DATABASE_URL, WEBHOOK_RETRY_DELAYS_MS: DELAYS.join(','), WEBHOOK_TIMEOUT_MS: '2000', WORKER_KINDS: 'image-generation' });
    receiver = await startHttpsReceiver((req, nth) => scripts.get(req.path)?.(nth) ?? 204);
    worker = await startWorker(system.env);
    account = await seedAccount(system.api, { credits: 1000 });
    key = await createKey(system.api, account, { type: 'paid' });
  });

  afterEach(async () => {
    relay.restore();
    await stopDispatcher();
  });

  afterAll(async () => {
    await worker?.stop();
    await receiver?.close();
    await system?.stop();
    await relay?.close();
  });

  /** The dispatcher, with PostgreSQL behind the relay. */
  async function startRelayedDispatcher(): Promise<void> {
    const viaRelay = new URL(DATABASE_URL);
    viaRelay.hostname = '127.0.0.1';
    viaRelay.port = String(relay.port);
    dispatcher = await startDispatcher({ ...system.env, DATABASE_URL: viaRelay.toString() });
  }

  async function stopDispatcher(): Promise<void> {
    const running = dispatcher;
    dispatcher = undefined;
    await running?.stop();
  }

  async function imageTask(path: string): Promise<string> {
    const res = await system.api.req('POST', '/api/tasks/image-generation', {
      headers: withKey(key),
      body: { prompt: `db failure ${path}`, width: 64, height: 64, callback_url: receiver.url(path) },
    });
    expect(res.status).toBe(201);
    return res.body.public_id;
  }

  async function deliveryLog(publicId: string): Promise<any> {
    const res = await system.api.req('GET', `/api/webhook-deliveries?public_id=${publicId}`, { headers: account.auth });
    expect(res.status).toBe(200);
    return res.body.data[0];
  }

  const waitForState = (publicId: string, state: string) =>
    waitFor(async () => {
      const d = await deliveryLog(publicId);
      return d?.state === state ? d : undefined;
    }, { timeoutMs: 20_000, intervalMs: 50, what: `delivery of ${publicId} to be ${state}` });

  /** Attempt rows straight from the database (the API does not list attempts still in flight). */
  async function attemptRows(deliveryId: string): Promise<AttemptRow[]> {
    const { rows } = await system.api.deps.db.pool.query<AttemptRow>(
      'SELECT attempt_number, status_code, error, in_flight FROM webhook_attempts WHERE delivery_id = $1 ORDER BY attempt_number',
      [deliveryId],
    );
    return rows;
  }

  /** The task's delivery row, once the worker has written it. */
  const deliveryRowOf = async (publicId: string) => {
    const [row] = await waitFor(async () => {
      const rows = await deliveriesOf(system.api, publicId);
      return rows.length > 0 ? rows : undefined;
    }, { timeoutMs: 20_000, what: 'the delivery row' });
    return row!;
  };

  const jobOf = (deliveryId: string, attempt: number) => system.api.deps.webhooks.queue.getJob(deliveryJobId(deliveryId, attempt));

  /** The result of attempt `attempt`, once the dispatcher, unable to record it, has kept it in the job. */
  const resultKeptInJob = (deliveryId: string, attempt: number) =>
    waitFor(async () => (await jobOf(deliveryId, attempt))?.data.result, { what: `attempt ${attempt}'s result to be kept in its job` });

  const sentNumbers = (path: string) => receiver.at(path).map((h) => h.headers['x-webhook-attempt']);

  /** Cuts the dispatcher's database connections, then answers `status`: the answer arrives while PostgreSQL is unreachable. */
  const cutThenAnswer = (status: number, body: string): ReceiverReply => {
    relay.cut();
    return { status, body };
  };

  it('a cut while attempt 1 is answered: attempt 1 is recorded once, with its status, and the next attempts are 2 and 3', async () => {
    await startRelayedDispatcher();
    scripts.set('/cut', (nth) => (nth === 1 ? cutThenAnswer(500, 'answered while the database was away') : nth === 2 ? 500 : 200));
    const publicId = await imageTask('/cut');
    const [first] = await receiver.waitForCount('/cut', 1);
    const deliveryId = String(first!.headers['webhook-id']);

    // The answer could not be recorded: the dispatcher keeps it (in the job) and waits for the database.
    expect(await resultKeptInJob(deliveryId, 1)).toMatchObject({
      status_code: 500,
      error: 'HTTP 500',
      response_excerpt: 'answered while the database was away',
    });
    expect(await (await jobOf(deliveryId, 1))!.getState()).toBe('active');
    // Number 1 was claimed before the POST left; the console counts it but lists no result yet.
    expect(await attemptRows(deliveryId)).toEqual([{ attempt_number: 1, status_code: null, error: null, in_flight: true }]);
    expect(await deliveryLog(publicId)).toMatchObject({ state: 'pending', attempt_count: 1, attempts: [] });
    expect(sentNumbers('/cut')).toEqual(['1']);

    relay.restore();
    const delivery = await waitForState(publicId, 'succeeded');
    expect(delivery.attempts.map((a: any) => [a.attempt_number, a.status_code, a.error])).toEqual([
      [1, 500, 'HTTP 500'],
      [2, 500, 'HTTP 500'],
      [3, 200, null],
    ]);
    expect(delivery.attempts[0].response_excerpt).toBe('answered while the database was away');
    expect(delivery.attempt_count).toBe(3);
    expect((await attemptRows(deliveryId)).map((a) => [a.attempt_number, a.in_flight])).toEqual([
      [1, false],
      [2, false],
      [3, false],
    ]);
    // Each number went out exactly once, and the receiver saw the numbers that were recorded.
    expect(sentNumbers('/cut')).toEqual(['1', '2', '3']);
    expect(await (await jobOf(deliveryId, 1))!.getState()).toBe('completed');
    expect(await jobOf(deliveryId, 4)).toBeUndefined();
  }, 60_000);

  it('a dispatcher restart while the database is unreachable: the kept result is recorded by the next dispatcher, not sent again', async () => {
    await startRelayedDispatcher();
    scripts.set('/restart', (nth) => (nth === 1 ? cutThenAnswer(503, 'busy') : nth === 2 ? 500 : 200));
    const publicId = await imageTask('/restart');
    const [first] = await receiver.waitForCount('/restart', 1);
    const deliveryId = String(first!.headers['webhook-id']);
    await resultKeptInJob(deliveryId, 1);

    // A graceful stop does not wait for the database: the job gives up this run and keeps the result.
    await stopDispatcher();
    const job = await jobOf(deliveryId, 1);
    expect(['delayed', 'waiting']).toContain(await job!.getState());
    expect(job!.data.result).toMatchObject({ status_code: 503, error: 'HTTP 503', response_excerpt: 'busy' });
    expect(await attemptRows(deliveryId)).toEqual([{ attempt_number: 1, status_code: null, error: null, in_flight: true }]);

    relay.restore();
    await startRelayedDispatcher();
    const delivery = await waitForState(publicId, 'succeeded');
    expect(delivery.attempts.map((a: any) => [a.attempt_number, a.status_code, a.error])).toEqual([
      [1, 503, 'HTTP 503'],
      [2, 500, 'HTTP 500'],
      [3, 200, null],
    ]);
    expect((await attemptRows(deliveryId)).every((a) => !a.in_flight)).toBe(true);
    expect(sentNumbers('/restart')).toEqual(['1', '2', '3']);
  }, 60_000);

  it('an attempt claimed by a dispatcher that died before recording it keeps its number: the next POST is attempt 2', async () => {
    scripts.set('/orphan', () => 200);
    // No dispatcher runs yet: the delivery and its first job wait.
    const publicId = await imageTask('/orphan');
    const pending = await deliveryRowOf(publicId);
    // What a dispatcher that crashed after claiming attempt 1 (and maybe sending it) left behind, long
    // enough ago that no live run could still be sending or recording it.
    expect(await claimAttempt(system.api.deps.db.pool, pending.id, 1, DEAD_CLAIM_TIME())).toBe(true);

    await startRelayedDispatcher();
    const delivery = await waitForState(publicId, 'succeeded');
    expect(delivery.attempts.map((a: any) => [a.attempt_number, a.status_code, a.error])).toEqual([
      [1, null, UNKNOWN_RESULT_ERROR],
      [2, 200, null],
    ]);
    expect(sentNumbers('/orphan')).toEqual(['2']);
  }, 60_000);

  it("Redis lost the job of an attempt in flight: the sweeper brings back that attempt's job, not the next one's", async () => {
    scripts.set('/swept', () => 200);
    const publicId = await imageTask('/swept');
    const pending = await deliveryRowOf(publicId);
    const deliveryId = pending.id;
    expect(await claimAttempt(system.api.deps.db.pool, deliveryId, 1, DEAD_CLAIM_TIME())).toBe(true);
    const lost = await waitFor(() => jobOf(deliveryId, 1), { what: 'the first job' });
    await lost.remove();

    expect(await sweepDeliveries(system.api.deps.db.pool, system.api.deps.webhooks, 0)).toBe(1);
    expect(await jobOf(deliveryId, 2)).toBeUndefined();
    await startRelayedDispatcher();
    const delivery = await waitForState(publicId, 'succeeded');
    expect(delivery.attempts.map((a: any) => [a.attempt_number, a.status_code, a.error])).toEqual([
      [1, null, UNKNOWN_RESULT_ERROR],
      [2, 200, null],
    ]);
    expect(sentNumbers('/swept')).toEqual(['2']);
  }, 60_000);

  it('a fresh claim may belong to a run still sending: a second run of the job waits instead of declaring it lost', async () => {
    scripts.set('/live', () => 200);
    const publicId = await imageTask('/live');
    const pending = await deliveryRowOf(publicId);
    const deliveryId = pending.id;
    // Another run claimed attempt 1 a moment ago and is (as far as anyone knows) still sending it.
    expect(await claimAttempt(system.api.deps.db.pool, deliveryId, 1, new Date())).toBe(true);

    await startRelayedDispatcher();
    // Read again once it is delayed: a job read before the move (then its state checked after it)
    // still shows the delay it was added with.
    const job = await waitFor(async () => {
      const j = await jobOf(deliveryId, 1);
      return j && (await j.getState()) === 'delayed' ? jobOf(deliveryId, 1) : undefined;
    }, { timeoutMs: 20_000, what: 'the second run to put the job back' });
    // Put back until the live run would have finished (the 2 s timeout plus 30 s to record), with
    // nothing sent and nothing recorded in its place.
    expect(job.delay).toBeGreaterThan(25_000);
    expect(receiver.at('/live')).toHaveLength(0);
    expect(await attemptRows(deliveryId)).toEqual([{ attempt_number: 1, status_code: null, error: null, in_flight: true }]);
  }, 60_000);
});
