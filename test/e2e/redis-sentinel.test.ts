// The system on Redis behind Sentinels (REDIS_SENTINELS): a private primary, replica and three
// Sentinels of this file's own (packages/testing/src/redis-sentinel.ts). Real failovers: the primary
// is killed and the Sentinels promote the replica, while clients create tasks. This file uses its
// own PostgreSQL database, so its sweepers (which put back what a failover lost) see only its tasks.
import { setTimeout as delay } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { freePort, recreateDatabase, startHttpsReceiver, startRedisSentinels, testDatabaseUrl, waitFor, type HttpsReceiver, type RedisSentinelGroup } from '@taskapi/testing';
import { startApi, withKey, type CreatedKey, type TestApi } from '../../services/api/test/support/harness';
import { CreationLoad, expectEveryTaskSettled, startFailoverSystem, unexpectedStatuses } from './support/ha-load';
import { startChild, startWorker, type RunningService } from './support/system';
import { waitForTask } from './support/tasks';

const DATABASE_URL = testDatabaseUrl('redis_sentinel');

describe('on Redis Sentinel', () => {
  let group: RedisSentinelGroup;
  let env: Record<string, string>;
  let api: TestApi;
  let worker: RunningService | undefined;
  let dispatcher: RunningService;
  let receiver: HttpsReceiver;
  let key: CreatedKey;

  beforeAll(async () => {
    await recreateDatabase(DATABASE_URL);
    group = await startRedisSentinels();
    receiver = await startHttpsReceiver(() => 204);
    ({ env, api, worker, dispatcher, key } = await startFailoverSystem({
      DATABASE_URL,
      // Its database number applies to the primary the Sentinels name.
      REDIS_URL: 'redis://127.0.0.1:6379/3',
      REDIS_SENTINELS: group.sentinels,
      REDIS_SENTINEL_NAME: group.name,
    }));
  }, 60_000);

  afterAll(async () => {
    await Promise.all([worker?.stop(), dispatcher?.stop()]);
    await api?.close();
    await receiver?.close();
    await group?.stop();
  });

  it('every connection goes to the primary the Sentinels name, with REDIS_URL database number', async () => {
    const primary = await group.primaryPort();
    for (const client of [api.deps.redis, api.deps.subscriber, api.deps.queueRedis] as Redis[]) {
      expect(client).toBeInstanceOf(Redis);
      expect(client.options.sentinels).toHaveLength(3);
      expect(client.options.db).toBe(3);
      expect(await client.call('CONFIG', 'GET', 'port')).toEqual(['port', String(primary)]);
    }
    const ready = await api.req('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ready', checks: { database: 'ok', redis: 'ok', storage: 'ok' } });
  });

  it('a failover under load loses nothing: every 201 task completes, is announced and charged once; no 500', async () => {
    const load = new CreationLoad(api, key.plaintext, receiver.url('/load'), 3);
    await waitFor(() => load.answers.created.length >= 15, { timeoutMs: 20_000, what: 'creations before the failover' });

    // A task held across the failover (no worker takes it until after), watched by a long-poll and an event stream.
    await worker!.stop();
    worker = undefined;
    const held = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'held', width: 64, height: 64, callback_url: receiver.url('/load') } });
    expect(held.status).toBe(201);
    const heldId = held.body.public_id as string;
    const longPoll = fetch(`${api.url}/api/tasks/${heldId}`, { headers: { 'x-api-key': key.plaintext, prefer: 'wait=15' } }).then(async (res) => ({ status: res.status, body: await res.text() }));
    const stream = readEvents(`${api.url}/api/tasks/${heldId}/events`, key.plaintext);
    await stream.opened;

    const { newPrimary, writableAt } = await group.failover();
    worker = await startWorker(env);
    await waitFor(() => load.answers.createdAt.some((t) => t > writableAt), { timeoutMs: 20_000, what: 'a creation answered 201 after the failover' });
    const firstAfter = load.answers.createdAt.find((t) => t > writableAt)!;
    await delay(1_000);
    const answers = await load.stop();
    console.log(`Redis failover: new primary ${newPrimary} took writes; first creation answered 201 ${firstAfter - writableAt} ms later; answers ${JSON.stringify([...answers.statuses])}`);

    expect(unexpectedStatuses(answers)).toEqual([]);
    expect(answers.withoutRetryAfter).toBe(0);
    await expectEveryTaskSettled(api, [...answers.created, heldId], receiver, '/load');

    // The long-poll answered (the task's state, or 503 while Redis was away: never a 500 or a cut connection).
    expect([200, 503]).toContain((await longPoll).status);
    // The event stream ended cleanly, with the task's end in it or before it (a client reconnects and reads on).
    const events = await stream.done;
    expect(events.error).toBeUndefined();
    const final = await api.req('GET', `/api/tasks/${heldId}`, { headers: withKey(key) });
    expect(final.body.status).toBe(20);
  }, 120_000);

  it('while no primary can be elected, creations answer 503 with Retry-After (never unlimited) and /readyz names each Sentinel', async () => {
    // Every Sentinel knows the last test's failover before two of them go.
    const primary = await group.untilSettled();
    await group.stopSentinel(1);
    await group.stopSentinel(2);
    const killed = await group.killPrimary();
    expect(killed).toBe(primary);
    try {
      // The rate-limit decision cannot be made: refused, never let through unlimited.
      await waitFor(
        async () => {
          const res = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'no primary', width: 64, height: 64 } });
          if (res.status === 201) throw new Error('a creation was accepted while Redis had no primary');
          return res.status === 503 && res;
        },
        { timeoutMs: 15_000, intervalMs: 100, what: 'a 503 while Redis has no primary' },
      ).then((res) => {
        expect(res.body.message).toEqual(expect.any(String));
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
      });
      const ready = await api.req('GET', '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.checks.redis).toBe('unavailable');
      const [s0, s1, s2] = group.sentinels.split(',');
      expect(ready.body.problems.redis).toContain(`${s0} names 127.0.0.1:${killed}`);
      expect(ready.body.problems.redis).toContain(`${s1} unreachable`);
      expect(ready.body.problems.redis).toContain(`${s2} unreachable`);
    } finally {
      await group.startSentinel(1);
      await group.startSentinel(2);
    }
    // With a quorum again the Sentinels promote the replica and the service comes back.
    const promoted = group.nodePorts.find((p) => p !== killed)!;
    await group.untilPrimary(promoted, 60_000);
    await group.rejoin(killed);
    const res = await waitFor(
      async () => {
        const r = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'after the election', width: 64, height: 64 } });
        return r.status === 201 && r;
      },
      { timeoutMs: 20_000, intervalMs: 100, what: 'creations to be accepted again' },
    );
    expect((await waitForTask(api, key.plaintext, res.body.public_id)).status).toBe(20);
    expect((await api.req('GET', '/readyz')).status).toBe(200);
  }, 120_000);

  it('/readyz names the Sentinels when they disagree on the primary', async () => {
    const other = await startRedisSentinels();
    const split = await startApi({ ...env, REDIS_SENTINELS: `${group.sentinels},${other.sentinels.split(',')[0]}` });
    try {
      const ready = await split.req('GET', '/readyz');
      expect(ready.status).toBe(503);
      expect(ready.body.problems.redis).toMatch(/^the Redis Sentinels disagree on the primary taskapi: /);
      expect(ready.body.problems.redis).toContain(`${other.sentinels.split(',')[0]} names 127.0.0.1:${await other.primaryPort()}`);
      expect(ready.body.problems.redis).toContain(`${group.sentinels.split(',')[0]} names 127.0.0.1:${await group.primaryPort()}`);
    } finally {
      await split.close();
      await other.stop();
    }
  }, 60_000);

  it('a worker whose Sentinels are all unreachable at start says so, naming each, while it waits', async () => {
    const unreachable = [await freePort(), await freePort()].map((p) => `127.0.0.1:${p}`);
    const child = await startChild('worker', { ...env, LOG_LEVEL: 'info', REDIS_SENTINELS: unreachable.join(',') }, 'waiting for Redis', 'node');
    try {
      const line = child.logs.find((l) => l.message === 'waiting for Redis')!;
      expect(line.problem).toBe(`no Redis Sentinel named the primary taskapi: ${unreachable[0]} unreachable (ECONNREFUSED); ${unreachable[1]} unreachable (ECONNREFUSED)`);
    } finally {
      await child.kill('SIGKILL');
    }
  }, 60_000);
});

/**
 * A task's event stream: `opened` once the API has answered and sent the first event, `done` with
 * the events when it ends; `error` when it was refused or broke instead of ending.
 */
function readEvents(url: string, apiKey: string): { opened: Promise<void>; done: Promise<{ events: string[]; error?: string }> } {
  let opened!: () => void;
  const openedPromise = new Promise<void>((resolve) => (opened = resolve));
  const done = (async () => {
    const events: string[] = [];
    try {
      const res = await fetch(url, { headers: { 'x-api-key': apiKey, accept: 'text/event-stream' }, signal: AbortSignal.timeout(60_000) });
      if (res.status !== 200) return { events, error: `HTTP ${res.status}` };
      let text = '';
      const decoder = new TextDecoder();
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        text += decoder.decode(chunk, { stream: true });
        if (/^event: /m.test(text)) opened();
      }
      for (const m of text.matchAll(/^event: (.+)$/gm)) events.push(m[1]!);
      return { events };
    } catch (err) {
      return { events, error: (err as Error).message };
    } finally {
      opened();
    }
  })();
  return { opened: openedPromise, done };
}
