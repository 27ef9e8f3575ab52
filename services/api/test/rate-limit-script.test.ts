// The rate-limit script itself, against a Redis server of its own (its command statistics are this
// file's alone): a batch of one key's requests is decided exactly as the requests would be one by
// one, in one call; the day window's hourly buckets; revocation and Redis failures for a batch.
import { Redis } from 'ioredis';
import { startPrivateRedis, startTcpRelay, waitFor, type PrivateRedis } from '@taskapi/testing';
import { ApiError } from '../src/errors';
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

/** Redis's clock: seconds, milliseconds and the hour number the script uses. */
async function redisNow() {
  const [sec, usec] = await redis.time();
  return { sec: Number(sec), ms: Number(sec) * 1000 + Math.floor(Number(usec) / 1000), hour: Math.floor(Number(sec) / 3600) };
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
    expect(ok.map((o) => (o.kind === 'accepted' ? o.state.day.remaining : -1))).toEqual(Array.from({ length: 20 }, (_, i) => 999 - i));
    for (const o of ok) expect(o.kind === 'accepted' && rateLimitHeader(o.state)).toMatch(/^"minute";r=\d+;t=60$/);
    for (const o of outcomes.slice(20)) {
      expect(o).toEqual({
        kind: 'limited',
        window: 'minute',
        limit: 20,
        retryAfter: 60,
        state: { minute: { remaining: 0, reset: 60 }, day: { remaining: 980, reset: expect.any(Number) } },
      });
    }
    // The sorted set holds the 20 accepted requests, each once; the day bucket counts them.
    const [minuteKey, dayKey] = rateLimitKeys(accountId, keyId);
    expect(await redis.zcard(minuteKey)).toBe(20);
    expect(Object.values(await redis.hgetall(dayKey))).toEqual(['20']);
  });

  it('returns each request its own prefetched value, null where the key is absent or none was asked', async () => {
    const { accountId, keyId } = ids();
    await redis.set(`task:{${accountId}}:a`, '10');
    await redis.set(`task:{${accountId}}:b`, '20');
    // The first request goes alone, the rest together (one of them twice: read once, answered to both).
    const keys = [`task:{${accountId}}:b`, `task:{${accountId}}:a`, undefined, `task:{${accountId}}:missing`, `task:{${accountId}}:b`, `task:{${accountId}}:a`];
    const outcomes = await Promise.all(keys.map((k) => limiter.consume(accountId, keyId, POLICY, k === undefined ? undefined : [k])));
    expect(outcomes.map((o) => (o.kind === 'accepted' ? o.prefetched : 'refused'))).toEqual([['20'], ['10'], [], [null], ['20'], ['10']]);
  });

  it('reads several prefetch keys of one request in order', async () => {
    const { accountId, keyId } = ids();
    await redis.set(`task:{${accountId}}:m`, '10');
    await redis.set(`task:{${accountId}}:p`, '0.5');
    const [both, reversed] = await Promise.all([
      limiter.consume(accountId, keyId, POLICY, [`task:{${accountId}}:m`, `task:{${accountId}}:p`]),
      limiter.consume(accountId, keyId, POLICY, [`task:{${accountId}}:p`, `task:{${accountId}}:none`, `task:{${accountId}}:m`]),
    ]);
    expect(both.kind === 'accepted' && both.prefetched).toEqual(['10', '0.5']);
    expect(reversed.kind === 'accepted' && reversed.prefetched).toEqual(['0.5', null, '10']);
  });

  it('refuses the requests that wait behind a call in flight once the key is revoked meanwhile', async () => {
    const { accountId, keyId } = ids();
    // The first call is sent before the marker is set (same connection, so in that order); the
    // requests that arrive while it is in flight are decided by the next call, after the marker.
    const first = limiter.consume(accountId, keyId, POLICY);
    const marked = redis.set(`taskapi:apikey:{${accountId}}:${keyId}:revoked`, '1');
    const later = Array.from({ length: 5 }, () => limiter.consume(accountId, keyId, POLICY));
    await marked;
    expect((await first).kind).toBe('accepted');
    expect(await Promise.all(later)).toEqual(Array.from({ length: 5 }, () => ({ kind: 'revoked' })));
  });

  it('counts the day in hourly buckets: a bucket 24 hours old has left, one 23 hours old has not', async () => {
    const { accountId, keyId } = ids();
    const [, dayKey] = rateLimitKeys(accountId, keyId);
    const { sec, hour } = await redisNow();
    await redis.hset(dayKey, { [hour - 24]: 900, [hour - 23]: 60, [hour - 1]: 39 });
    const policy = { perMinute: 300, perDay: 100 };
    const outcomes = await Promise.all(Array.from({ length: 3 }, () => limiter.consume(accountId, keyId, policy)));
    // 99 counted: one more fits; the day is then the tighter window. It frees a request when the
    // bucket of 23 hours ago (60 requests) leaves, at the end of this hour (give or take the second
    // that may have passed since the clock was read).
    const reset = (hour + 1) * 3600 - sec;
    const first = outcomes[0]!;
    expect(first).toMatchObject({ kind: 'accepted', state: { day: { remaining: 0 } } });
    const header = first.kind === 'accepted' ? rateLimitHeader(first.state) : '';
    expect(header).toMatch(/^"day";r=0;t=\d+$/);
    const t = Number(/t=(\d+)/.exec(header)![1]);
    expect(t === reset || t === reset - 1).toBe(true);
    // The other two are refused by the day window, with the same wait.
    for (const o of outcomes.slice(1)) {
      expect(o).toEqual({
        kind: 'limited',
        window: 'day',
        limit: 100,
        retryAfter: t,
        state: { minute: { remaining: 299, reset: 60 }, day: { remaining: 0, reset: t } },
      });
    }
    expect(await redis.hgetall(dayKey)).toEqual({ [hour - 23]: '60', [hour - 1]: '39', [hour]: '1' });
  });

  it('answers the retry time of a full minute from the oldest counted request, in a batch too', async () => {
    const { accountId, keyId } = ids();
    const [minuteKey] = rateLimitKeys(accountId, keyId);
    const { ms } = await redisNow();
    // 19 of 20 counted, the oldest 45 s ago (and one 61 s ago that no longer counts).
    await redis.zadd(minuteKey, ms - 61_000, 'gone', ms - 45_000, 'oldest', ...Array.from({ length: 18 }, (_, i) => [ms - 1_000, `m${i}`]).flat());
    const outcomes = await Promise.all(Array.from({ length: 4 }, () => limiter.consume(accountId, keyId, POLICY)));
    expect(accepted(outcomes)).toHaveLength(1);
    for (const o of outcomes.slice(1)) {
      expect(o.kind).toBe('limited');
      if (o.kind !== 'limited') continue;
      expect(o.window).toBe('minute');
      expect(o.retryAfter).toBeGreaterThanOrEqual(14);
      expect(o.retryAfter).toBeLessThanOrEqual(16);
      expect(o.state.minute).toEqual({ remaining: 0, reset: o.retryAfter });
    }
    expect(await redis.zscore(minuteKey, 'gone')).toBeNull();
  });

  it('answers every request of a batch 503 when Redis cannot be reached, and serves again once it can', async () => {
    const relay = await startTcpRelay('127.0.0.1', Number(new URL(server.url).port));
    const viaRelay = new Redis(`redis://127.0.0.1:${relay.port}`, { enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 1_000 });
    await new Promise((resolve) => viaRelay.once('ready', resolve));
    try {
      const relayed = new RateLimiter(viaRelay);
      const { accountId, keyId } = ids();
      expect((await relayed.consume(accountId, keyId, POLICY)).kind).toBe('accepted');
      relay.cut();
      const results = await Promise.allSettled(Array.from({ length: 4 }, () => relayed.consume(accountId, keyId, POLICY)));
      for (const r of results) {
        expect(r.status).toBe('rejected');
        expect(r.status === 'rejected' && r.reason instanceof ApiError && r.reason.status).toBe(503);
      }
      relay.restore();
      await waitFor(async () => (await relayed.consume(accountId, keyId, POLICY).catch(() => undefined))?.kind === 'accepted', {
        timeoutMs: 10_000,
        what: 'the limiter to serve again',
      });
    } finally {
      viaRelay.disconnect();
      await relay.close();
    }
  });
});
