import { Batcher, type RedisClient } from '@taskapi/service';
import { randomBase62 } from '@taskapi/crypto';
import type { RateLimitPolicy } from '@taskapi/config';
import { unavailable } from '../errors';
import { apiScripts } from '../infra/api-scripts';
import { revokedMarkerKey } from './key-revocation';

// One script call (src/commands/rate-limit.lua) decides every request of one key that is
// waiting in this process (see `RateLimiter`), atomically on the Redis server and with the
// server's clock, so any number of API replicas agree. These are the keys and layouts the
// one-request-per-call script of earlier releases used, so replicas of both count together during
// a rolling upgrade.

/**
 * The reply's slots, in the script's order (its header lists them). The first five describe the
 * accepted requests (the window counts before the first of them, and the resets after it); the
 * next six the rejected ones (zeros when none; limitedWindow 0 minute, 2 day).
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

/** One call: the key's three keys and the prefetched ones, and what to decide. */
interface RateLimitCall {
  keys: readonly string[];
  policy: RateLimitPolicy;
  requests: number;
  /** Unique to this call: the sorted-set members are this and a request number. */
  prefix: string;
  /** A batch request: all or none, after taking back the one request counted when it arrived. */
  batch?: { ticket: RateLimitTicket };
}

const rateLimitScript = apiScripts.define({
  command: 'rate-limit',
  keys: (call: RateLimitCall) => call.keys,
  args: ({ policy, requests, prefix, batch }) => [policy.perMinute, policy.perDay, requests, prefix, ...(batch ? ['1', batch.ticket.member, batch.ticket.hour] : [])],
  reply: (raw) => readReply(raw as Array<number | string | null>),
});

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
  private readonly batcher: Batcher<string, Pending, RateLimitOutcome>;
  // Unique per process; the counter makes each call's sorted-set members unique.
  private readonly tag = randomBase62(10);
  private seq = 0;

  constructor(private readonly redis: RedisClient) {
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
    let reply: ScriptReply | 'revoked';
    try {
      reply = await rateLimitScript(this.redis, { keys, policy, requests: size, prefix, batch: { ticket } });
    } catch (err) {
      throw unavailable('redis', err);
    }
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
    let reply: ScriptReply | 'revoked';
    const prefix = `${this.tag}:${++this.seq}:`;
    try {
      reply = await rateLimitScript(this.redis, { keys, policy, requests: batch.length, prefix });
    } catch (err) {
      throw unavailable('redis', err);
    }
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
