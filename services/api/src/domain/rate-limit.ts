import { Batcher, type RedisClient } from '@taskapi/service';
import { randomBase62 } from '@taskapi/crypto';
import type { RateLimitPolicy } from '@taskapi/config';
import { unavailable } from '../errors';
import { revokedMarkerKey } from './key-revocation';

// One script call decides every request of one key that is waiting in this process (see
// `RateLimiter`), atomically on the Redis server and with the server's clock, so any number of API
// replicas agree. Each request is decided in arrival order exactly as if it had come alone.
// Minute: exact sliding window over a sorted set of accepted request times (ms).
// Day: rolling 24 h of hourly buckets (the current hour and the 23 before it) in a hash.
// These are the keys and layouts the one-request-per-call script of earlier releases used, so
// replicas of both count together during a rolling upgrade.
// A revoked key's marker refuses the whole batch before anything is counted; rejected requests add
// nothing. The same call reads the keys the requests ask for (a read of one task prefetches its
// status marker and its progress, see domain/read-task.ts), so no request needs a second round trip.
// All keys carry the account's hash tag, so the script touches one Redis Cluster slot.
//
// KEYS: 1 minute zset, 2 day hash, 3 revocation marker, 4.. the keys to prefetch (each once,
//       however many requests asked for it)
// ARGV: 1 minute limit, 2 day limit, 3 number of requests, 4 a prefix unique to this call (the
//       sorted-set members are the prefix and a request number); for a batch request
//       (`consumeBatch`): 5 '1' (all the requests or none), 6 and 7 the sorted-set member and the
//       hour of the one request already counted for it, which is taken back first (so a refused
//       batch counts nothing, and an accepted one counts its size)
// Returns {-1} when the key is revoked, else the slots of REPLY_SLOTS followed by the value (or
// nil) of each prefetched key, in KEYS order; `readReply` names them.

/**
 * The reply's slots, in order. The first five describe the accepted requests (the window counts
 * before the first of them, and the resets after it); the next six the rejected ones (zeros when
 * none; limitedWindow 0 minute, 2 day). The script below writes each slot by this table's index.
 */
const REPLY_SLOTS = [
  'accepted',
  'minuteCount',
  'dayCount',
  'minuteReset',
  'dayReset',
  'limitedWindow',
  'limitedMinuteRemaining',
  'limitedMinuteReset',
  'limitedDayRemaining',
  'limitedDayReset',
  'retryAfter',
  'hour',
] as const;
/** The Lua (1-based) index of a reply slot. */
const slot = (name: (typeof REPLY_SLOTS)[number]): number => REPLY_SLOTS.indexOf(name) + 1;

const SCRIPT = /* lua */ `
if redis.call('EXISTS', KEYS[3]) == 1 then return {-1} end
if ARGV[6] then
  redis.call('ZREM', KEYS[1], ARGV[6])
  if redis.call('HEXISTS', KEYS[2], ARGV[7]) == 1 and redis.call('HINCRBY', KEYS[2], ARGV[7], -1) <= 0 then
    redis.call('HDEL', KEYS[2], ARGV[7])
  end
end
local n = tonumber(ARGV[3])
-- How many requests must fit at once: each alone, or a batch's all together.
local need = 1
if ARGV[5] == '1' then need = n end
local m = #KEYS - 3
local prefetched = {}
if m > 0 then prefetched = redis.call('MGET', unpack(KEYS, 4, 3 + m)) end
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

local accepted = 0
while accepted < n and mcount + accepted < mlimit and dcount + accepted < dlimit do accepted = accepted + 1 end
if accepted < need then accepted = 0 end
if accepted > 0 then
  local members = {}
  for i = 1, accepted do
    members[2 * i - 1] = now
    members[2 * i] = ARGV[4] .. i
  end
  redis.call('ZADD', KEYS[1], unpack(members))
  redis.call('PEXPIRE', KEYS[1], window + 1000)
  redis.call('HINCRBY', KEYS[2], hour, accepted)
  redis.call('EXPIRE', KEYS[2], 25 * 3600)
  if counts[hour] == nil then table.insert(hours, hour) end
  counts[hour] = (counts[hour] or 0) + accepted
end
local mtotal = mcount + accepted
local dtotal = dcount + accepted

-- Seconds until the window holds fewer than it does now: when its (index+1)-th oldest time leaves.
local function minute_reset(index)
  local e = redis.call('ZRANGE', KEYS[1], index, index, 'WITHSCORES')
  if #e == 0 then return 0 end
  return math.max(1, math.ceil((tonumber(e[2]) + window - now) / 1000))
end
-- Seconds until 'need' counted requests have left the day window, oldest hours first.
local function day_reset(need)
  for _, h in ipairs(hours) do
    need = need - counts[h]
    if need <= 0 then return math.max(1, (h + 24) * 3600 - sec) end
  end
  return 86400
end

local out = {}
for i = 1, ${REPLY_SLOTS.length} do out[i] = 0 end
out[${slot('accepted')}] = accepted
out[${slot('minuteCount')}] = mcount
out[${slot('dayCount')}] = dcount
out[${slot('hour')}] = hour
if accepted > 0 then
  out[${slot('minuteReset')}] = minute_reset(0)
  out[${slot('dayReset')}] = day_reset(1)
end
if accepted < n then
  local mwait = 0
  local dwait = 0
  if mtotal + need > mlimit then mwait = minute_reset(mtotal + need - mlimit - 1) end
  if dtotal + need > dlimit then dwait = day_reset(dtotal + need - dlimit) end
  local mres = mwait
  if mres == 0 then mres = minute_reset(0) end
  local dres = dwait
  if dres == 0 then dres = day_reset(1) end
  local w = 0
  local retry = mwait
  if dwait >= mwait then
    w = 2
    retry = dwait
  end
  out[${slot('limitedWindow')}] = w
  out[${slot('limitedMinuteRemaining')}] = math.max(0, mlimit - mtotal)
  out[${slot('limitedMinuteReset')}] = mres
  out[${slot('limitedDayRemaining')}] = math.max(0, dlimit - dtotal)
  out[${slot('limitedDayReset')}] = dres
  out[${slot('retryAfter')}] = retry
end
for i = 1, m do out[${REPLY_SLOTS.length} + i] = prefetched[i] end
return out
`;

/** Most requests of one key decided by one script call. */
const MAX_BATCH = 100;

/** Where one accepted request was counted: what `consumeBatch` takes back before counting a batch. */
export interface RateLimitTicket {
  member: string;
  hour: number;
}

export type RateLimitOutcome =
  | {
      kind: 'accepted';
      state: WindowState;
      /** The value at each prefetch key, in order (null when absent); empty when none was asked. */
      prefetched: Array<string | null>;
      ticket: RateLimitTicket;
    }
  | { kind: 'limited'; window: 'minute' | 'day'; limit: number; retryAfter: number; state: WindowState }
  | { kind: 'revoked' };

/** Remaining requests and seconds until more become available, per window. */
export interface WindowState {
  minute: { remaining: number; reset: number };
  day: { remaining: number; reset: number };
}

interface Pending {
  accountId: string;
  keyId: string;
  policy: RateLimitPolicy;
  prefetchKeys: readonly string[] | undefined;
}

type RateLimitRedis = RedisClient & {
  taskapiRateLimitBatch(numKeys: number, ...keysThenArgs: Array<string | number>): Promise<Array<number | string | null>>;
};

/** The script's reply by name: the slots of REPLY_SLOTS, then the prefetched values in KEYS order. */
type ScriptReply = Record<(typeof REPLY_SLOTS)[number], number> & { prefetched: Array<string | null> };

/** Reads the script's reply into its names; the one place that knows the slot order. */
function readReply(r: Array<number | string | null>): ScriptReply | 'revoked' {
  if (r[0] === -1) return 'revoked';
  const reply = { prefetched: r.slice(REPLY_SLOTS.length) as Array<string | null> } as ScriptReply;
  for (let i = 0; i < REPLY_SLOTS.length; i++) reply[REPLY_SLOTS[i]!] = r[i] as number;
  return reply;
}

/** The minute sorted set and the day hash of one API key (tests age the minute window through the first). */
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

/**
 * Per-key rate limits (docs/api.md, rate limits). Requests of one key that arrive while its previous script call
 * is in flight wait for it and are then decided together by the next call ("group commit", see
 * `Batcher`): under load one round trip and one script run serve many requests, and an idle key's
 * request goes at once, alone. Every request is still decided by one atomic script call on the
 * Redis server, after it arrived, so the windows stay exact across any number of replicas and a
 * revocation stops the very next request.
 */
export class RateLimiter {
  private readonly redis: RateLimitRedis;
  private readonly batcher: Batcher<string, Pending, RateLimitOutcome>;
  // Unique per process; the counter makes each call's sorted-set members unique.
  private readonly tag = randomBase62(10);
  private seq = 0;

  constructor(redis: RedisClient) {
    if (!('taskapiRateLimitBatch' in redis)) redis.defineCommand('taskapiRateLimitBatch', { lua: SCRIPT });
    this.redis = redis as RateLimitRedis;
    this.batcher = new Batcher((_key, batch) => this.decide(batch), { maxItems: MAX_BATCH });
  }

  /**
   * Counts one request for the key if both windows allow it, and reads `prefetchKeys` (a few keys
   * with the account's hash tag) when given. Redis unavailable → 503.
   */
  consume(accountId: string, keyId: string, policy: RateLimitPolicy, prefetchKeys?: readonly string[]): Promise<RateLimitOutcome> {
    // The policy is part of the batch's identity: every request of a batch is decided under one.
    return this.batcher.submit(`${accountId} ${keyId} ${policy.perMinute} ${policy.perDay}`, { accountId, keyId, policy, prefetchKeys });
  }

  /**
   * A batch request of `size` tasks counts as `size` requests, all or none: takes back the one
   * request `ticket` counted when the batch arrived, then counts `size` if both windows have room
   * for all of them. Refused, it counts nothing. Redis unavailable → 503.
   */
  async consumeBatch(accountId: string, keyId: string, policy: RateLimitPolicy, ticket: RateLimitTicket, size: number): Promise<RateLimitOutcome> {
    const keys = [...rateLimitKeys(accountId, keyId), revokedMarkerKey(accountId, keyId)];
    const prefix = `${this.tag}:${++this.seq}:`;
    let r: Array<number | string | null>;
    try {
      r = await this.redis.taskapiRateLimitBatch(keys.length, ...keys, policy.perMinute, policy.perDay, size, prefix, '1', ticket.member, ticket.hour);
    } catch (err) {
      throw unavailable('redis', err);
    }
    const reply = readReply(r);
    if (reply === 'revoked') return { kind: 'revoked' };
    if (reply.accepted === size) {
      const state: WindowState = {
        minute: { remaining: policy.perMinute - reply.minuteCount - size, reset: reply.minuteReset },
        day: { remaining: policy.perDay - reply.dayCount - size, reset: reply.dayReset },
      };
      return { kind: 'accepted', state, prefetched: [], ticket: { member: `${prefix}1`, hour: reply.hour } };
    }
    return limitedOutcome(reply, policy);
  }

  private async decide(batch: Pending[]): Promise<RateLimitOutcome[]> {
    const { accountId, keyId, policy } = batch[0] as Pending;
    const keys = [...rateLimitKeys(accountId, keyId), revokedMarkerKey(accountId, keyId)];
    // Each key once: a crowd polling one task asks for its marker and progress once.
    const prefetchAt = new Map<string, number>();
    for (const p of batch) {
      for (const key of p.prefetchKeys ?? []) {
        if (prefetchAt.has(key)) continue;
        prefetchAt.set(key, prefetchAt.size);
        keys.push(key);
      }
    }
    let r: Array<number | string | null>;
    const prefix = `${this.tag}:${++this.seq}:`;
    try {
      r = await this.redis.taskapiRateLimitBatch(keys.length, ...keys, policy.perMinute, policy.perDay, batch.length, prefix);
    } catch (err) {
      throw unavailable('redis', err);
    }
    const reply = readReply(r);
    if (reply === 'revoked') return batch.map((): RateLimitOutcome => ({ kind: 'revoked' }));
    return batch.map((p, i): RateLimitOutcome => {
      if (i < reply.accepted) {
        const state: WindowState = {
          minute: { remaining: policy.perMinute - reply.minuteCount - i - 1, reset: reply.minuteReset },
          day: { remaining: policy.perDay - reply.dayCount - i - 1, reset: reply.dayReset },
        };
        const prefetched = (p.prefetchKeys ?? []).map((key) => reply.prefetched[prefetchAt.get(key)!] ?? null);
        return { kind: 'accepted', state, prefetched, ticket: { member: `${prefix}${i + 1}`, hour: reply.hour } };
      }
      return limitedOutcome(reply, policy);
    });
  }
}

function limitedOutcome(reply: ScriptReply, policy: RateLimitPolicy): RateLimitOutcome {
  const window = reply.limitedWindow === 2 ? 'day' : 'minute';
  const state: WindowState = {
    minute: { remaining: reply.limitedMinuteRemaining, reset: reply.limitedMinuteReset },
    day: { remaining: reply.limitedDayRemaining, reset: reply.limitedDayReset },
  };
  return { kind: 'limited', window, limit: window === 'day' ? policy.perDay : policy.perMinute, retryAfter: reply.retryAfter, state };
}
