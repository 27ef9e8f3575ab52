import { Batcher, type RedisClient } from '@taskapi/service';
import type { RateLimitPolicy } from '@taskapi/config';
import { unavailable } from '../errors';
import { revokedMarkerKey } from './key-revocation';

// One script call decides every request of one key that is waiting in this process (see
// `RateLimiter`), atomically on the Redis server and with the server's clock, so any number of API
// replicas agree. Each request is decided in arrival order exactly as if it had come alone.
//
// Minute: exact sliding window. A list holds the time (ms) of every accepted request of the last
//   60 s, oldest first: expired times leave from the head, accepted ones join at the tail, the
//   length is the count. (A list rather than a sorted set: appends and trims at the ends are O(1)
//   and a time costs bytes, where a sorted-set member cost a skiplist node, 80+ bytes and O(log n).)
// Day: rolling 24 h of hourly buckets (this hour and the 23 before) in a hash, field = hour number,
//   plus `n`, the sum of the live buckets, and `h`, the hour they were last pruned. Buckets only
//   leave at an hour boundary, so the sum is read as is until the hour changes, then recounted.
// A revoked key's marker refuses the whole batch before anything is counted; rejected requests add
// nothing. The same call reads one key per request that the caller asks for (a read of one task
// prefetches its status marker, see domain/read-task.ts), so no request needs a second round trip.
// Keys that the old layout (a sorted set and a bare hash, at `LEGACY_*`) left are imported when a
// key's new hash does not exist yet, so an upgrade does not reset anyone's windows.
// All keys carry the account's hash tag, so the script touches one Redis Cluster slot.
//
// KEYS: 1 minute list, 2 day hash, 3 revocation marker, 4 legacy minute zset, 5 legacy day hash,
//       6.. the keys to prefetch (each once, however many requests asked for it)
// ARGV: 1 minute limit, 2 day limit, 3 number of requests
// Returns {-1} when the key is revoked, else
//   {accepted, minute_count, day_count, minute_reset_s, day_reset_s,
//    limited_window, minute_remaining, minute_reset_s, day_remaining, day_reset_s, retry_after_s,
//    prefetched...}
// where the first five describe the accepted requests (counts before the first of them; day_reset_s
// only when the day window is the tighter one, else 0), the next six the rejected ones
// (limited_window 0 minute, 2 day; zeros when none), and prefetched has the value (or nil) of each
// prefetched key, in KEYS order.
const SCRIPT = `
if redis.call('EXISTS', KEYS[3]) == 1 then return {-1} end
local n = tonumber(ARGV[3])
local m = #KEYS - 5
local prefetched = {}
if m > 0 then prefetched = redis.call('MGET', unpack(KEYS, 6, 5 + m)) end
local mlimit = tonumber(ARGV[1])
local dlimit = tonumber(ARGV[2])
local t = redis.call('TIME')
local sec = tonumber(t[1])
local now = sec * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = 60000
local cutoff = now - window
local hour = math.floor(sec / 3600)

local d = redis.call('HMGET', KEYS[2], 'n', 'h')
if not d[2] and redis.call('LLEN', KEYS[1]) == 0 then
  local old = redis.call('ZRANGEBYSCORE', KEYS[4], '(' .. cutoff, '+inf', 'WITHSCORES')
  local times = {}
  for i = 2, #old, 2 do
    table.insert(times, old[i])
    if #times == 1000 or i == #old then
      redis.call('RPUSH', KEYS[1], unpack(times))
      times = {}
    end
  end
  if #old > 0 then redis.call('PEXPIRE', KEYS[1], window + 1000) end
  local flat = redis.call('HGETALL', KEYS[5])
  for i = 1, #flat, 2 do
    local h = tonumber(flat[i])
    if h and h > hour - 24 then redis.call('HSET', KEYS[2], h, flat[i + 1]) end
  end
end

-- Minute: drop expired times from the head; the first time still inside is the oldest.
local oldest = nil
local chunk = 4 + 2 * n
repeat
  local head = redis.call('LRANGE', KEYS[1], 0, chunk - 1)
  local expired = 0
  for i = 1, #head do
    local v = tonumber(head[i])
    if v > cutoff then oldest = v break end
    expired = i
  end
  if expired > 0 then redis.call('LPOP', KEYS[1], expired) end
until expired < chunk
local mcount = redis.call('LLEN', KEYS[1])

-- Day: the live sum, recounted (and dead buckets dropped) at the first call of each hour.
local dcount = tonumber(d[1])
local buckets = nil
local function read_buckets(prune)
  buckets = {}
  local flat = redis.call('HGETALL', KEYS[2])
  for i = 1, #flat, 2 do
    local h = tonumber(flat[i])
    if h and h > hour - 24 then
      buckets[h] = tonumber(flat[i + 1])
    elseif h and prune then
      redis.call('HDEL', KEYS[2], flat[i])
    end
  end
end
if tonumber(d[2]) ~= hour or not dcount then
  read_buckets(true)
  dcount = 0
  for _, c in pairs(buckets) do dcount = dcount + c end
  redis.call('HSET', KEYS[2], 'h', hour, 'n', dcount)
  redis.call('EXPIRE', KEYS[2], 25 * 3600)
end

local accepted = 0
while accepted < n and mcount + accepted < mlimit and dcount + accepted < dlimit do accepted = accepted + 1 end
local before = mcount
local minute_total = mcount + accepted
local day_total = dcount + accepted
if accepted > 0 then
  local times = {}
  for i = 1, accepted do times[i] = now end
  redis.call('RPUSH', KEYS[1], unpack(times))
  redis.call('PEXPIRE', KEYS[1], window + 1000)
  redis.call('HINCRBY', KEYS[2], hour, accepted)
  redis.call('HINCRBY', KEYS[2], 'n', accepted)
  if buckets then buckets[hour] = (buckets[hour] or 0) + accepted end
end

-- Seconds until the window holds fewer than it does now, when the (index+1)-th oldest time leaves.
local function minute_reset(index)
  local at = nil
  if index < before then
    if index == 0 then at = oldest else at = tonumber(redis.call('LINDEX', KEYS[1], index)) end
  elseif index < minute_total then
    at = now
  end
  if not at then return 0 end
  return math.max(1, math.ceil((at + window - now) / 1000))
end
-- Seconds until 'need' counted requests have left the day window, oldest hours first.
local function day_reset(need)
  if not buckets then read_buckets(false) end
  local hours = {}
  for h in pairs(buckets) do table.insert(hours, h) end
  table.sort(hours)
  for _, h in ipairs(hours) do
    need = need - buckets[h]
    if need <= 0 then return math.max(1, (h + 24) * 3600 - sec) end
  end
  return 86400
end

local out = {accepted, mcount, dcount, 0, 0, 0, 0, 0, 0, 0, 0}
if accepted > 0 then
  out[4] = minute_reset(0)
  if dlimit - dcount < mlimit - mcount then out[5] = day_reset(1) end
end
if accepted < n then
  local mwait = 0
  local dwait = 0
  if minute_total >= mlimit then mwait = minute_reset(minute_total - mlimit) end
  if day_total >= dlimit then dwait = day_reset(day_total - dlimit + 1) end
  local mres = mwait
  if mres == 0 then mres = minute_reset(0) end
  local dres = dwait
  if dres == 0 then dres = day_reset(1) end
  local w = 0
  local retry = mwait
  if dwait >= mwait then w = 2 retry = dwait end
  out[6] = w
  out[7] = math.max(0, mlimit - minute_total)
  out[8] = mres
  out[9] = math.max(0, dlimit - day_total)
  out[10] = dres
  out[11] = retry
end
for i = 1, m do out[11 + i] = prefetched[i] end
return out
`;

/** Most requests of one key decided by one script call. */
const MAX_BATCH = 100;

export type RateLimitOutcome =
  | { kind: 'accepted'; state: WindowState; /** The value at the prefetch key, or null when absent. */ prefetched: string | null }
  | { kind: 'limited'; window: 'minute' | 'day'; limit: number; retryAfter: number; state: WindowState }
  | { kind: 'revoked' };

/** Remaining requests and seconds until more become available, per window. */
export interface WindowState {
  minute: { remaining: number; reset: number };
  /** `reset` is only computed when the day window is the tighter one (fewer remaining); else 0. */
  day: { remaining: number; reset: number };
}

interface Pending {
  accountId: string;
  keyId: string;
  policy: RateLimitPolicy;
  prefetchKey: string | undefined;
}

type RateLimitRedis = RedisClient & {
  taskapiRateLimitBatch(numKeys: number, ...keysThenArgs: Array<string | number>): Promise<Array<number | string | null>>;
};

/** The minute list and the day hash of one API key (tests age the minute window through the first). */
export function rateLimitKeys(accountId: string, keyId: string): [string, string] {
  return [`taskapi:rl:{${accountId}}:${keyId}:minute`, `taskapi:rl:{${accountId}}:${keyId}:day`];
}

/** Where versions before the batched script kept a key's windows: read once, on upgrade. */
function legacyRateLimitKeys(accountId: string, keyId: string): [string, string] {
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

/**
 * Per-key rate limits (DESIGN §6). Requests of one key that arrive while its previous script call
 * is in flight wait for it and are then decided together by the next call ("group commit", see
 * `Batcher`): under load one round trip and one script run serve many requests, and an idle key's
 * request goes at once, alone. Every request is still decided by one atomic script call on the
 * Redis server, after it arrived, so the windows stay exact across any number of replicas and a
 * revocation stops the very next request.
 */
export class RateLimiter {
  private readonly redis: RateLimitRedis;
  private readonly batcher: Batcher<string, Pending, RateLimitOutcome>;

  constructor(redis: RedisClient) {
    if (!('taskapiRateLimitBatch' in redis)) redis.defineCommand('taskapiRateLimitBatch', { lua: SCRIPT });
    this.redis = redis as RateLimitRedis;
    this.batcher = new Batcher((_key, batch) => this.decide(batch), { maxItems: MAX_BATCH });
  }

  /**
   * Counts one request for the key if both windows allow it, and reads `prefetchKey` (a key with
   * the account's hash tag) when given. Redis unavailable → 503.
   */
  consume(accountId: string, keyId: string, policy: RateLimitPolicy, prefetchKey?: string): Promise<RateLimitOutcome> {
    // The policy is part of the batch's identity: every request of a batch is decided under one.
    return this.batcher.submit(`${accountId} ${keyId} ${policy.perMinute} ${policy.perDay}`, { accountId, keyId, policy, prefetchKey });
  }

  private async decide(batch: Pending[]): Promise<RateLimitOutcome[]> {
    const { accountId, keyId, policy } = batch[0] as Pending;
    const keys = [...rateLimitKeys(accountId, keyId), revokedMarkerKey(accountId, keyId), ...legacyRateLimitKeys(accountId, keyId)];
    // Each key once: a crowd polling one task asks for its marker once.
    const prefetchAt = new Map<string, number>();
    for (const p of batch) {
      if (p.prefetchKey !== undefined && !prefetchAt.has(p.prefetchKey)) {
        prefetchAt.set(p.prefetchKey, 11 + prefetchAt.size);
        keys.push(p.prefetchKey);
      }
    }
    let r: Array<number | string | null>;
    try {
      r = await this.redis.taskapiRateLimitBatch(keys.length, ...keys, policy.perMinute, policy.perDay, batch.length);
    } catch (err) {
      throw unavailable('redis', err);
    }
    if (r[0] === -1) return batch.map((): RateLimitOutcome => ({ kind: 'revoked' }));
    const [accepted, minuteCount, dayCount, minuteReset, dayReset, limitedWindow, ...rest] = r as number[];
    const [mrem, mres, drem, dres, retryAfter] = rest;
    return batch.map((p, i): RateLimitOutcome => {
      if (i < accepted!) {
        const state: WindowState = {
          minute: { remaining: policy.perMinute - minuteCount! - i - 1, reset: minuteReset! },
          day: { remaining: policy.perDay - dayCount! - i - 1, reset: dayReset! },
        };
        const at = p.prefetchKey === undefined ? undefined : prefetchAt.get(p.prefetchKey);
        return { kind: 'accepted', state, prefetched: at === undefined ? null : ((r[at] as string | null) ?? null) };
      }
      const window = limitedWindow === 2 ? 'day' : 'minute';
      const state: WindowState = { minute: { remaining: mrem!, reset: mres! }, day: { remaining: drem!, reset: dres! } };
      return { kind: 'limited', window, limit: window === 'day' ? policy.perDay : policy.perMinute, retryAfter: retryAfter!, state };
    });
  }
}
