// The rate-limit script itself, against a Redis server of its own (its command statistics are this
// file's alone): batches of one key's requests, the day window's hourly pruning, and the import of
// the windows an older version left in its own layout.
import { Redis } from 'ioredis';
import { startPrivateRedis, type PrivateRedis } from '@taskapi/testing';
import { rateLimitHeader, RateLimiter, rateLimitKeys, type RateLimitOutcome } from '../src/domain/rate-limit';

const POLICY = { perMinute: 20, perDay: 1000 };

let server: PrivateRedis;
let redis: Redis;
let limiter: RateLimiter;
let n = 0;
/** A fresh account and key for each test. */
const ids = () => ({ accountId: `acct_rl${++n}`, keyId: `key_rl${n}` });

async function scriptCalls(): Promise<number> {
  const stats = await redis.info('commandstats');
  const calls = (command: string) => Number(new RegExp(`cmdstat_${command}:calls=(\\d+)`).exec(stats)?.[1] ?? 0);
  return calls('evalsha') + calls('eval');
}

const accepted = (outcomes: RateLimitOutcome[]) => outcomes.filter((o) => o.kind === 'accepted');

beforeAll(async () => {
  server = await startPrivateRedis();
  redis = new Redis(server.url, { enableAutoPipelining: true });
  limiter = new RateLimiter(redis);
  // Loads the script, so that no test counts ioredis's EVALSHA → NOSCRIPT → EVAL of the first call.
  await limiter.consume('acct_warm', 'key_warm', POLICY);
});

afterAll(async () => {
  await redis.quit();
  await server.stop();
});

describe('the rate-limit script', () => {
  it('decides 50 concurrent requests of one key in two calls: the first alone, the rest together, each exactly', async () => {
    const { accountId, keyId } = ids();
    const before = await scriptCalls();
    const outcomes = await Promise.all(Array.from({ length: 50 }, () => limiter.consume(accountId, keyId, POLICY)));
    expect((await scriptCalls()) - before).toBe(2);

    const ok = accepted(outcomes);
    expect(ok).toHaveLength(20);
    // In arrival order: the first 20 are accepted, with 19 down to 0 left.
    expect(outcomes.slice(0, 20).every((o) => o.kind === 'accepted')).toBe(true);
    expect(ok.map((o) => (o.kind === 'accepted' ? o.state.minute.remaining : -1))).toEqual(Array.from({ length: 20 }, (_, i) => 19 - i));
    for (const o of ok) expect(o.kind === 'accepted' && rateLimitHeader(o.state)).toMatch(/^"minute";r=\d+;t=60$/);
    for (const o of outcomes.slice(20)) {
      expect(o).toEqual({ kind: 'limited', window: 'minute', limit: 20, retryAfter: 60, state: expect.anything() });
    }
    expect(await redis.llen(rateLimitKeys(accountId, keyId)[0])).toBe(20);
    expect(await redis.hget(rateLimitKeys(accountId, keyId)[1], 'n')).toBe('20');
  });

  it('returns each request its own prefetched value, null where the key is absent or none was asked', async () => {
    const { accountId, keyId } = ids();
    await redis.set(`task:{${accountId}}:a`, '10');
    await redis.set(`task:{${accountId}}:b`, '20');
    // The first request goes alone, the rest together (one of them twice: read once, answered to both).
    const keys = [`task:{${accountId}}:b`, `task:{${accountId}}:a`, undefined, `task:{${accountId}}:missing`, `task:{${accountId}}:b`, `task:{${accountId}}:a`];
    const outcomes = await Promise.all(keys.map((k) => limiter.consume(accountId, keyId, POLICY, k)));
    expect(outcomes.map((o) => (o.kind === 'accepted' ? o.prefetched : 'refused'))).toEqual(['20', '10', null, null, '20', '10']);
  });

  it('refuses a whole batch once the key is revoked', async () => {
    const { accountId, keyId } = ids();
    await limiter.consume(accountId, keyId, POLICY);
    await redis.set(`taskapi:apikey:{${accountId}}:${keyId}:revoked`, '1');
    const outcomes = await Promise.all(Array.from({ length: 5 }, () => limiter.consume(accountId, keyId, POLICY)));
    expect(outcomes).toEqual(Array.from({ length: 5 }, () => ({ kind: 'revoked' })));
  });

  it('recounts the day at the first call of an hour, dropping buckets older than 24 hours', async () => {
    const { accountId, keyId } = ids();
    const [, dayKey] = rateLimitKeys(accountId, keyId);
    const [sec] = await redis.time();
    const hour = Math.floor(Number(sec) / 3600);
    // Last pruned 30 hours ago: one bucket has since left the window, two are still inside it.
    await redis.hset(dayKey, { h: hour - 30, n: 999, [hour - 25]: 900, [hour - 23]: 60, [hour - 1]: 39 });
    const out = await limiter.consume(accountId, keyId, { perMinute: 300, perDay: 100 });
    expect(out).toMatchObject({ kind: 'accepted', state: { day: { remaining: 0 } } });
    // The day is the tighter window, so its reset is known: when the bucket of 23 hours ago leaves.
    expect(out.kind === 'accepted' && out.state.day.reset).toBeGreaterThan(0);
    expect(out.kind === 'accepted' && out.state.day.reset).toBeLessThanOrEqual(3600);
    expect(await redis.hgetall(dayKey)).toEqual({ h: String(hour), n: '100', [hour - 23]: '60', [hour - 1]: '39', [hour]: '1' });
    const refused = await limiter.consume(accountId, keyId, { perMinute: 300, perDay: 100 });
    expect(refused).toMatchObject({ kind: 'limited', window: 'day', limit: 100 });
  });

  it('takes over the windows an older version kept (sorted set and bare hash), so an upgrade resets nobody', async () => {
    const { accountId, keyId } = ids();
    const [sec] = await redis.time();
    const nowMs = Number(sec) * 1000;
    const hour = Math.floor(Number(sec) / 3600);
    const legacyMinute = `taskapi:rl:{${accountId}}:${keyId}:m`;
    const legacyDay = `taskapi:rl:{${accountId}}:${keyId}:d`;
    // Three requests in the last minute (one 50 s ago), one from two minutes ago; 500 today.
    await redis.zadd(legacyMinute, nowMs - 120_000, 'a', nowMs - 50_000, 'b', nowMs - 1_000, 'c', nowMs - 500, 'd');
    await redis.hset(legacyDay, { [hour - 30]: 7, [hour - 2]: 300, [hour]: 200 });

    const out = await limiter.consume(accountId, keyId, POLICY);
    expect(out).toMatchObject({ kind: 'accepted', state: { minute: { remaining: 20 - 3 - 1 }, day: { remaining: 1000 - 500 - 1 } } });
    // The oldest counted request (50 s ago) leaves the window in about 10 s.
    expect(out.kind === 'accepted' && out.state.minute.reset).toBeGreaterThanOrEqual(9);
    expect(out.kind === 'accepted' && out.state.minute.reset).toBeLessThanOrEqual(11);
    expect(await redis.llen(rateLimitKeys(accountId, keyId)[0])).toBe(4);

    // Imported once: later calls read the new layout only.
    await redis.zadd(legacyMinute, nowMs, 'e');
    const next = await limiter.consume(accountId, keyId, POLICY);
    expect(next).toMatchObject({ kind: 'accepted', state: { minute: { remaining: 20 - 4 - 1 } } });
  });

  it('answers the retry time of a full minute from the oldest counted request, in a batch too', async () => {
    const { accountId, keyId } = ids();
    const [minuteKey] = rateLimitKeys(accountId, keyId);
    const [sec, usec] = await redis.time();
    const nowMs = Number(sec) * 1000 + Math.floor(Number(usec) / 1000);
    // 19 of 20 counted, the oldest 45 s ago.
    await redis.rpush(minuteKey, nowMs - 45_000, ...Array.from({ length: 18 }, () => nowMs - 1_000));
    await redis.hset(rateLimitKeys(accountId, keyId)[1], { h: Math.floor(Number(sec) / 3600), n: 19, [Math.floor(Number(sec) / 3600)]: 19 });
    const outcomes = await Promise.all(Array.from({ length: 4 }, () => limiter.consume(accountId, keyId, POLICY)));
    expect(accepted(outcomes)).toHaveLength(1);
    for (const o of outcomes.slice(1)) {
      expect(o.kind).toBe('limited');
      if (o.kind !== 'limited') continue;
      expect(o.retryAfter).toBeGreaterThanOrEqual(14);
      expect(o.retryAfter).toBeLessThanOrEqual(16);
      expect(o.state.minute.remaining).toBe(0);
    }
  });
});
