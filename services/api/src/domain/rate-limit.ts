import type { RedisClient } from '@taskapi/service';
import { randomBase62 } from '@taskapi/crypto';
import type { RateLimitPolicy } from '@taskapi/config';
import { unavailable } from '../errors';
import { revokedMarkerKey } from './key-revocation';

// One round trip, atomic on the Redis server, using the server's clock (so any number of API
// replicas agree). Minute: exact sliding window over a sorted set of request times (ms).
// Day: rolling 24 h of hourly buckets (the current hour and the 23 before it) in a hash.
// A revoked key's marker short-circuits before anything is counted; rejected requests add nothing.
// The same round trip also reads one key the caller asks for (a read of one task prefetches its
// status marker, see domain/read-task.ts), so the caller saves a round trip.
// All keys carry the account's hash tag, so the script touches one Redis Cluster slot.
//
// KEYS: 1 minute zset, 2 day hash, 3 revocation marker, 4 key to prefetch (may not exist)
// ARGV: 1 minute limit, 2 day limit, 3 unique member for this request
// Returns {outcome, minute_remaining, minute_reset_s, day_remaining, day_reset_s, retry_after_s, prefetched}
// outcome: 1 accepted, 0 minute limit hit, 2 day limit hit, -1 key revoked; prefetched: the value, absent when none
const SCRIPT = `
if redis.call('EXISTS', KEYS[3]) == 1 then return {-1, 0, 0, 0, 0, 0} end
local prefetched = redis.call('GET', KEYS[4])
local mlimit = tonumber(ARGV[1])
local dlimit = tonumber(ARGV[2])
local t = redis.call('TIME')
local sec = tonumber(t[1])
local now = sec * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = 60000

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local mcount = redis.call('ZCARD', KEYS[1])

local hour = math.floor(sec / 3600)
local flat = redis.call('HGETALL', KEYS[2])
local hours = {}
local counts = {}
local dcount = 0
for i = 1, #flat, 2 do
  local h = tonumber(flat[i])
  if h <= hour - 24 then
    redis.call('HDEL', KEYS[2], flat[i])
  else
    local c = tonumber(flat[i + 1])
    dcount = dcount + c
    counts[h] = c
    table.insert(hours, h)
  end
end
table.sort(hours)

local function minute_reset(index)
  local e = redis.call('ZRANGE', KEYS[1], index, index, 'WITHSCORES')
  if #e == 0 then return 0 end
  return math.max(1, math.ceil((tonumber(e[2]) + window - now) / 1000))
end
local function day_reset(need)
  for _, h in ipairs(hours) do
    need = need - counts[h]
    if need <= 0 then return math.max(1, (h + 24) * 3600 - sec) end
  end
  return 86400
end

local mwait = 0
local dwait = 0
if mcount >= mlimit then mwait = minute_reset(mcount - mlimit) end
if dcount >= dlimit then dwait = day_reset(dcount - dlimit + 1) end
if mwait > 0 or dwait > 0 then
  local mrem = math.max(0, mlimit - mcount)
  local drem = math.max(0, dlimit - dcount)
  local mres = mwait
  if mres == 0 then mres = minute_reset(0) end
  local dres = dwait
  if dres == 0 then dres = day_reset(1) end
  if dwait >= mwait then return {2, mrem, mres, drem, dres, dwait, prefetched} end
  return {0, mrem, mres, drem, dres, mwait, prefetched}
end

redis.call('ZADD', KEYS[1], now, ARGV[3])
redis.call('PEXPIRE', KEYS[1], window + 1000)
redis.call('HINCRBY', KEYS[2], hour, 1)
redis.call('EXPIRE', KEYS[2], 25 * 3600)
if counts[hour] == nil then table.insert(hours, hour) end
counts[hour] = (counts[hour] or 0) + 1
return {1, mlimit - mcount - 1, minute_reset(0), dlimit - dcount - 1, day_reset(1), 0, prefetched}
`;

export type RateLimitOutcome =
  | { kind: 'accepted'; state: WindowState; /** The value at the prefetch key, or null when absent. */ prefetched: string | null }
  | { kind: 'limited'; window: 'minute' | 'day'; limit: number; retryAfter: number; state: WindowState }
  | { kind: 'revoked' };

/** Remaining requests and seconds until more become available, per window. */
export interface WindowState {
  minute: { remaining: number; reset: number };
  day: { remaining: number; reset: number };
}

type RateLimitRedis = RedisClient & {
  taskapiRateLimit(k1: string, k2: string, k3: string, k4: string, a1: number, a2: number, a3: string): Promise<Array<number | string>>;
};

export function rateLimitKeys(accountId: string, keyId: string): [string, string] {
  return [`taskapi:rl:{${accountId}}:${keyId}:m`, `taskapi:rl:{${accountId}}:${keyId}:d`];
}

/** The `RateLimit-Policy` header value for a policy (IETF draft syntax). */
export function policyHeader(policy: RateLimitPolicy): string {
  return `"minute";q=${policy.perMinute};w=60, "day";q=${policy.perDay};w=86400`;
}

/** The `RateLimit` header value: the window with fewer requests left. */
export function rateLimitHeader(state: WindowState): string {
  const tighter = state.day.remaining < state.minute.remaining ? 'day' : 'minute';
  const w = state[tighter];
  return `"${tighter}";r=${w.remaining};t=${w.reset}`;
}

export class RateLimiter {
  private readonly redis: RateLimitRedis;
  // Unique per process; the counter makes each request's sorted-set member unique.
  private readonly tag = randomBase62(10);
  private seq = 0;

  constructor(redis: RedisClient) {
    if (!('taskapiRateLimit' in redis)) redis.defineCommand('taskapiRateLimit', { numberOfKeys: 4, lua: SCRIPT });
    this.redis = redis as RateLimitRedis;
  }

  /**
   * Counts one request for the key if both windows allow it, and reads `prefetchKey` (a key with
   * the account's hash tag) when given. Redis unavailable → 503.
   */
  async consume(accountId: string, keyId: string, policy: RateLimitPolicy, prefetchKey?: string): Promise<RateLimitOutcome> {
    const [minuteKey, dayKey] = rateLimitKeys(accountId, keyId);
    let r: Array<number | string>;
    try {
      r = await this.redis.taskapiRateLimit(
        minuteKey,
        dayKey,
        revokedMarkerKey(accountId, keyId),
        // A key in the same slot that never exists stands in when nothing is prefetched.
        prefetchKey ?? `taskapi:rl:{${accountId}}:none`,
        policy.perMinute,
        policy.perDay,
        `${this.tag}:${++this.seq}`,
      );
    } catch (err) {
      throw unavailable('redis', err);
    }
    const [outcome, mrem, mres, drem, dres, retryAfter, prefetched] = r as [number, number, number, number, number, number, string | undefined];
    if (outcome === -1) return { kind: 'revoked' };
    const state: WindowState = { minute: { remaining: mrem, reset: mres }, day: { remaining: drem, reset: dres } };
    if (outcome === 1) return { kind: 'accepted', state, prefetched: prefetched ?? null };
    const window = outcome === 2 ? 'day' : 'minute';
    return { kind: 'limited', window, limit: window === 'day' ? policy.perDay : policy.perMinute, retryAfter, state };
  }
}
