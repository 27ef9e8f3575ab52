// The system on PostgreSQL behind HAProxy, a primary and a synchronous standby of this file's own
// (packages/testing/src/postgres-pair.ts): the primary is fenced and the standby promoted while
// clients create tasks. The services only know the proxy's address and reconnect on their own.
import { setTimeout as delay } from 'node:timers/promises';
import { recreateDatabase, startHttpsReceiver, startPostgresPair, startPrivateRedis, waitFor, type HttpsReceiver, type PostgresPair, type PrivateRedis } from '@taskapi/testing';
import { withKey, type CreatedKey, type TestAccount, type TestApi } from '../../services/api/test/support/harness';
import { CreationLoad, expectEveryTaskSettled, startFailoverSystem, unexpectedStatuses } from './support/ha-load';
import type { RunningService } from './support/system';

describe('across a PostgreSQL primary switch', () => {
  let pair: PostgresPair;
  let redis: PrivateRedis;
  let api: TestApi;
  let worker: RunningService;
  let dispatcher: RunningService;
  let receiver: HttpsReceiver;
  let account: TestAccount;
  let key: CreatedKey;

  beforeAll(async () => {
    [pair, redis] = await Promise.all([startPostgresPair(), startPrivateRedis()]);
    const DATABASE_URL = pair.url('taskapi_ha');
    await recreateDatabase(DATABASE_URL);
    receiver = await startHttpsReceiver(() => 204);
    ({ api, worker, dispatcher, account, key } = await startFailoverSystem({ DATABASE_URL, REDIS_URL: redis.url }));
  }, 60_000);

  afterAll(async () => {
    await Promise.all([worker?.stop(), dispatcher?.stop()]);
    await api?.close();
    await receiver?.close();
    await Promise.all([pair?.stop(), redis?.stop()]);
  });

  it.each(['immediate', 'fast'] as const)(
    'a switch (old primary stopped -m %s) under load: every 201 task completes, is announced and charged once; 503s carry Retry-After; no 500',
    async (stopMode) => {
      const load = new CreationLoad(api, key.plaintext, receiver.url(`/load-${stopMode}`), 3);
      await waitFor(() => load.answers.created.length >= 15, { timeoutMs: 20_000, what: 'creations before the switch' });
      // A long-poll open across the switch answers (the task, or 503), never a 500 or a cut connection.
      const waiting = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'polled', width: 64, height: 64, callback_url: receiver.url(`/load-${stopMode}`) } });
      const longPoll = fetch(`${api.url}/api/tasks/${waiting.body.public_id}`, { headers: { 'x-api-key': key.plaintext, prefer: 'wait=10' } }).then((res) => res.status);

      const before = pair.primary();
      const { writableAt, rebuilt } = await pair.switchover({ stopMode });
      expect(pair.primary()).toBe(1 - before);
      await waitFor(() => load.answers.createdAt.some((t) => t > writableAt), { timeoutMs: 30_000, what: 'a creation answered 201 after the switch' });
      const firstAfter = load.answers.createdAt.find((t) => t > writableAt)!;
      await delay(1_000);
      const answers = await load.stop();
      console.log(`PostgreSQL switch (${stopMode}): first creation answered 201 ${firstAfter - writableAt} ms after the new primary took writes; answers ${JSON.stringify([...answers.statuses])}`);

      expect(unexpectedStatuses(answers)).toEqual([]);
      expect(answers.withoutRetryAfter).toBe(0);
      expect([200, 503]).toContain(await longPoll);
      await expectEveryTaskSettled(api, [...answers.created, waiting.body.public_id], receiver, `/load-${stopMode}`);
      // The balance is exactly the opening credits less one charge per task.
      const { rows } = await api.deps.db.pool.query<{ balance: number; charged: number }>(
        `SELECT a.paid_balance AS balance, (SELECT COALESCE(SUM(t.cost), 0)::int FROM tasks t WHERE t.account_id = a.id) AS charged FROM accounts a WHERE a.id = $1`,
        [account.id],
      );
      expect(rows[0]!.balance + rows[0]!.charged).toBe(1_000_000);
      await rebuilt; // the old primary streams again: the next switch has a standby
    },
    120_000,
  );
});
