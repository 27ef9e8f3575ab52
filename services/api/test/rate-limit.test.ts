import type { RedisClient } from '@taskapi/service';
import { startTcpRelay, TEST_REDIS_URL, waitFor } from '@taskapi/testing';
import { rateLimitKeys } from '../src/domain/rate-limit';
import { createKey, seedAccount, seedGrant, startApi, withKey, type TestApi, type CreatedKey } from './support/harness';

type TrialKey = CreatedKey & { accountId: string };

/** Shifts the minute window's stored request times into the past, as if `ms` had elapsed. */
async function ageMinuteWindow(redis: RedisClient, key: TrialKey, ms: number): Promise<void> {
  const [minuteKey] = rateLimitKeys(key.accountId, key.id);
  const entries = await redis.zrange(minuteKey, '0', '-1', 'WITHSCORES');
  const multi = redis.multi();
  for (let i = 0; i < entries.length; i += 2) multi.zadd(minuteKey, String(Number(entries[i + 1]) - ms), entries[i] as string);
  await multi.exec();
}

describe('rate limits', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startApi();
  });
  afterAll(async () => {
    await api.close();
  });

  async function trialKey(target: TestApi = api): Promise<TrialKey> {
    const account = await seedAccount(target);
    const grant = await seedGrant(target, account, 100);
    return { ...(await createKey(target, account, { type: 'trial', grant_id: grant })), accountId: account.id };
  }

  it('a burst of 50 concurrent requests with a trial key yields exactly 20 accepted', async () => {
    const key = await trialKey();
    const results = await Promise.all(Array.from({ length: 50 }, () => api.req('GET', '/api/tasks', { headers: withKey(key) })));
    const accepted = results.filter((r) => r.status === 200);
    const limited = results.filter((r) => r.status === 429);
    expect(accepted).toHaveLength(20);
    expect(limited).toHaveLength(30);

    for (const r of results) expect(r.headers.get('ratelimit-policy')).toBe('"minute";q=20;w=60, "day";q=1000;w=86400');
    // Each accepted request saw a distinct number of remaining requests: 19 down to 0.
    const remaining = accepted.map((r) => Number(/^"minute";r=(\d+);t=(\d+)$/.exec(r.headers.get('ratelimit') ?? '')?.[1]));
    expect(remaining.sort((x, y) => x - y)).toEqual(Array.from({ length: 20 }, (_, i) => i));

    for (const r of limited) {
      expect(r.body).toEqual({ message: 'Rate limit exceeded.', limit: 20, window: 'minute', retry_after: expect.any(Number) });
      expect(r.body.retry_after).toBeGreaterThanOrEqual(1);
      expect(r.body.retry_after).toBeLessThanOrEqual(60);
      expect(r.headers.get('retry-after')).toBe(String(r.body.retry_after));
      expect(r.headers.get('ratelimit')).toBe(`"minute";r=0;t=${r.body.retry_after}`);
    }
  });

  it('is exact across two API replicas sharing Redis', async () => {
    const other = await startApi();
    try {
      const key = await trialKey();
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) => (i % 2 ? api : other).req('GET', '/api/tasks', { headers: withKey(key) })),
      );
      expect(results.filter((r) => r.status === 200)).toHaveLength(20);
      expect(results.filter((r) => r.status === 429)).toHaveLength(30);
    } finally {
      await other.close();
    }
  });

  it('counts per key: another key of the same account has its own quota', async () => {
    const account = await seedAccount(api);
    const [g1, g2] = [await seedGrant(api, account, 10), await seedGrant(api, account, 10)];
    const k1 = await createKey(api, account, { type: 'trial', grant_id: g1 });
    const k2 = await createKey(api, account, { type: 'trial', grant_id: g2 });
    await Promise.all(Array.from({ length: 25 }, () => api.req('GET', '/api/tasks', { headers: withKey(k1) })));
    const res = await api.req('GET', '/api/tasks', { headers: withKey(k2) });
    expect(res.status).toBe(200);
    expect(res.headers.get('ratelimit')).toBe('"minute";r=19;t=60');
  });

  it('paid keys get the paid policy', async () => {
    const account = await seedAccount(api);
    const key = await createKey(api, account, { type: 'paid' });
    const res = await api.req('GET', '/api/tasks', { headers: withKey(key) });
    expect(res.headers.get('ratelimit-policy')).toBe('"minute";q=300;w=60, "day";q=100000;w=86400');
    expect(res.headers.get('ratelimit')).toBe('"minute";r=299;t=60');
  });

  it('the minute window slides, rejected requests are not counted, and the day limit applies', async () => {
    const small = await startApi({ RATE_LIMIT_TRIAL_PER_MINUTE: '3', RATE_LIMIT_TRIAL_PER_DAY: '4' });
    try {
      const key = await trialKey(small);
      const get = () => small.req('GET', '/api/tasks', { headers: withKey(key) });
      for (let i = 0; i < 3; i++) expect((await get()).status).toBe(200);
      for (let i = 0; i < 10; i++) expect((await get()).body.window).toBe('minute');

      // 61 s later only the day window remembers the 3 accepted requests (not the 10 refused ones),
      // so exactly one more fits in the day limit of 4.
      await ageMinuteWindow(small.deps.redis, key, 61_000);
      const fourth = await get();
      expect(fourth.status).toBe(200);
      expect(fourth.headers.get('ratelimit')).toMatch(/^"day";r=0;t=\d+$/);
      const fifth = await get();
      expect(fifth.status).toBe(429);
      expect(fifth.body).toEqual({ message: 'Rate limit exceeded.', limit: 4, window: 'day', retry_after: expect.any(Number) });
      expect(fifth.body.retry_after).toBeGreaterThan(22 * 3600);
      expect(fifth.body.retry_after).toBeLessThanOrEqual(24 * 3600);
    } finally {
      await small.close();
    }
  });

  it('retry_after says when the oldest counted request leaves the minute window', async () => {
    const small = await startApi({ RATE_LIMIT_TRIAL_PER_MINUTE: '2' });
    try {
      const key = await trialKey(small);
      const get = () => small.req('GET', '/api/tasks', { headers: withKey(key) });
      await get();
      await ageMinuteWindow(small.deps.redis, key, 45_000);
      await get();
      const limited = await get();
      expect(limited.status).toBe(429);
      // The first request is 45 s old: it leaves the window in about 15 s.
      expect(limited.body.retry_after).toBeGreaterThanOrEqual(14);
      expect(limited.body.retry_after).toBeLessThanOrEqual(16);
    } finally {
      await small.close();
    }
  });

  it('answers 503 while Redis is unreachable (never unlimited), and recovers', async () => {
    const target = new URL(TEST_REDIS_URL);
    const relay = await startTcpRelay(target.hostname, Number(target.port || 6379));
    const viaRelay = await startApi({ REDIS_URL: `redis://127.0.0.1:${relay.port}${target.pathname}` });
    try {
      const account = await seedAccount(viaRelay);
      const key = await createKey(viaRelay, account, { type: 'paid' });
      expect((await viaRelay.req('GET', '/api/tasks', { headers: withKey(key) })).status).toBe(200);

      relay.cut();
      for (let i = 0; i < 5; i++) {
        const res = await viaRelay.req('GET', '/api/tasks', { headers: withKey(key) });
        expect(res.status).toBe(503);
        expect(res.body).toEqual({ message: 'Service temporarily unavailable. Please retry shortly.' });
        expect(res.headers.get('retry-after')).toBe('1');
      }

      relay.restore();
      await waitFor(async () => (await viaRelay.req('GET', '/api/tasks', { headers: withKey(key) })).status === 200, {
        timeoutMs: 10_000,
        what: 'recovery after Redis returns',
      });
    } finally {
      await viaRelay.close();
      await relay.close();
    }
  });
});
