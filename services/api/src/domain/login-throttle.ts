import { isIPv4, isIPv6 } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import type { RedisClient } from '@taskapi/service';
import { randomBase62 } from '@taskapi/crypto';
import type { Config } from '@taskapi/config';
import { ApiError, unavailable } from '../errors';
import { apiScripts } from '../infra/api-scripts';

/** `LOGIN_*` settings: limits per 15-minute window and the cap of the per-e-mail slowdown. */
export type LoginLimits = Config['login'];

/** Every counter of the throttle lives this long after its first entry. */
export const LOGIN_WINDOW_SECONDS = 15 * 60;
/** Addresses that may fail for one e-mail within the window before its attempts slow down. */
export const SLOWDOWN_FREE_ADDRESSES = 2;
/** Delay when one more address than that fails; it doubles with each further address, up to the cap. */
export const SLOWDOWN_FIRST_DELAY_MS = 250;

/**
 * Longest wait for the e-mail's turn, after which the password is checked anyway (never refused):
 * 2 × the delay cap (at least 1 s) from an address that has not failed for the e-mail, 5 × from
 * one that has. Addresses that have not failed also go first.
 */
export function maxTurnWaitMs(limits: LoginLimits, failedBefore: boolean): number {
  return Math.max((failedBefore ? 5 : 2) * limits.slowdownMaxMs, 1_000);
}

/**
 * The delay before checking a password for an e-mail that `failingAddresses` client addresses
 * have failed for in the window: none for the first two (one attacker's address, or the owner's
 * own typos, never slows anyone else), then 250 ms doubling per address up to `maxMs`.
 */
export function slowdownMs(failingAddresses: number, maxMs: number): number {
  if (failingAddresses <= SLOWDOWN_FREE_ADDRESSES) return 0;
  return Math.min(maxMs, SLOWDOWN_FIRST_DELAY_MS * 2 ** (failingAddresses - SLOWDOWN_FREE_ADDRESSES - 1));
}

/** Where every client address that cannot be read as an IP address is counted: together. */
const UNREADABLE_ADDRESS = 'unreadable';

/**
 * The address the limits count a client under: IPv4 as is (also when IPv4-mapped), IPv6 by its
 * /64 prefix, because one subscriber usually holds a whole /64 and could otherwise take a fresh
 * address per request. A port or zone id a proxy wrote along (`1.2.3.4:5678`, `[::1]:80`,
 * `fe80::1%eth0`) is dropped, and anything that is still not an address shares one bucket, so
 * varying the spelling never yields a fresh count.
 */
export function throttleAddress(raw: string): string {
  let ip = raw.trim();
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(ip);
  if (bracketed) ip = bracketed[1]!;
  else if (/^[\d.]+:\d+$/.test(ip)) ip = ip.slice(0, ip.lastIndexOf(':'));
  ip = ip.replace(/%.*$/, '');
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(ip);
  if (mapped) ip = mapped[1]!;
  if (isIPv4(ip)) return ip;
  if (!isIPv6(ip)) return UNREADABLE_ADDRESS;
  // The URL parser writes any IPv6 spelling in one canonical form (lower case, embedded IPv4 as hex).
  const canonical = new URL(`http://[${ip}]/`).hostname.slice(1, -1);
  const [head = '', tail] = canonical.split('::');
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups.slice(0, 4).join(':')}::/64`;
}

// Only the newest failing addresses per e-mail are kept: the delay's cap is reached long before.
const KEPT_FAILING_ADDRESSES = 100;
const TURN_POLL_MS = 50;

type Outcome = 'failed' | 'succeeded' | 'abandoned';

/**
 * The keys of one (e-mail, address), sharing the e-mail's hash tag: failures of (e-mail, address),
 * its attempt in flight, the e-mail's failing addresses, its turn, its attempts waiting with
 * priority (src/commands/login-*.lua).
 */
function throttleKeys(emailTag: string, address: string): string[] {
  const prefix = `taskapi:login:{${emailTag}}`;
  return [`${prefix}:failures:${address}`, `${prefix}:in-flight:${address}`, `${prefix}:failing`, `${prefix}:turn`, `${prefix}:waiting`];
}

const beginScript = apiScripts.define({
  command: 'login-begin',
  keys: (i: { keys: string[]; limit: number; token: string; holdMs: number; priorityMs: number }) => i.keys,
  args: (i) => [i.limit, i.token, i.holdMs, i.priorityMs, LOGIN_WINDOW_SECONDS * 1000],
  reply: (raw) => {
    const [admitted = 0, failingOrRetryAfter = 1, turn = 0, failedBefore = 0] = raw as number[];
    return admitted === 0
      ? ({ admitted: false, retryAfter: failingOrRetryAfter } as const)
      : ({ admitted: true, failingAddresses: failingOrRetryAfter, hasTurn: turn === 1, failedBefore: failedBefore === 1 } as const);
  },
});

const takeTurnScript = apiScripts.define({
  command: 'login-take-turn',
  keys: (i: { keys: string[]; token: string; holdMs: number; failedBefore: boolean }) => i.keys,
  args: (i) => [i.token, i.holdMs, i.failedBefore ? '1' : '0'],
  reply: (raw) => raw === 1,
});

const finishScript = apiScripts.define({
  command: 'login-finish',
  keys: (i: { keys: string[]; outcome: Outcome; address: string; token: string }) => i.keys,
  args: (i) => [i.outcome, i.address, i.token, KEPT_FAILING_ADDRESSES, LOGIN_WINDOW_SECONDS],
  reply: () => undefined,
});

/** One admitted login attempt: report how it ended, exactly once. */
export interface LoginAttempt {
  /** Wrong password or unknown e-mail: counts for (e-mail, address) and slows the e-mail down. */
  failed(): Promise<void>;
  /** Clears the failures of (e-mail, address). */
  succeeded(): Promise<void>;
  /** Ended by an error before a verdict: the attempt counts for nothing. */
  abandoned(): Promise<void>;
}

const limited = (retryAfter: number) => new ApiError('TOO_MANY_LOGIN_ATTEMPTS', { fields: { retry_after: Math.max(1, retryAfter) } });

/**
 * Login throttling that an attacker cannot turn against the account's owner:
 * - per client address, every attempt counts (`maxAttemptsPerIp`) → 429;
 * - per (e-mail, address), failures count (`maxFailuresPerEmailAndIp`; a success clears them) and
 *   one attempt runs at a time → 429;
 * - per e-mail across addresses, nothing is refused: password checks take turns, each after
 *   `slowdownMs(addresses failing for the e-mail)`. Addresses that have not failed for the e-mail
 *   go first, and no attempt waits longer than `maxTurnWaitMs` (then it is checked anyway), so the
 *   owner gets in within seconds while a distributed attack runs, and the attack gets one guess
 *   per turn plus, per address, one guess every `maxTurnWaitMs`.
 * Keys of one e-mail share its hash tag (one Redis Cluster slot per script); the per-address
 * counter has its own and is a separate call. Redis unavailable → 503.
 */
export class LoginThrottle {
  constructor(
    private readonly redis: RedisClient,
    private readonly limits: LoginLimits,
  ) {}

  /**
   * Counts the attempt and waits until the password may be checked (its turn and its delay).
   * `emailTag` identifies the e-mail (a hash, never the address itself); `address` comes from
   * `throttleAddress`. Throws 429 with `retry_after` when a limit refuses the attempt.
   */
  async admit(emailTag: string, address: string): Promise<LoginAttempt> {
    const start = Date.now();
    await this.countAddressAttempt(address);

    const keys = throttleKeys(emailTag, address);
    const token = randomBase62(16);
    // Covers the longest wait, the delay and the check; a process that dies holding a marker
    // delays the next attempts by at most one wait.
    const holdMs = maxTurnWaitMs(this.limits, true) + this.limits.slowdownMaxMs + 5_000;
    let begun;
    try {
      const priorityMs = maxTurnWaitMs(this.limits, false) + 1_000;
      begun = await beginScript(this.redis, { keys, limit: this.limits.maxFailuresPerEmailAndIp, token, holdMs, priorityMs });
    } catch (err) {
      throw unavailable('redis', err);
    }
    if (!begun.admitted) throw limited(begun.retryAfter);
    const { failedBefore } = begun;

    const finish = (outcome: Outcome) => finishScript(this.redis, { keys, outcome, address, token });
    try {
      const delayMs = slowdownMs(begun.failingAddresses, this.limits.slowdownMaxMs);
      const deadline = start + maxTurnWaitMs(this.limits, failedBefore);
      let hasTurn = begun.hasTurn;
      while (!hasTurn && Date.now() < deadline) {
        await sleep(Math.min(TURN_POLL_MS * (1 + Math.random()), deadline - Date.now()));
        hasTurn = await takeTurnScript(this.redis, { keys, token, holdMs, failedBefore });
      }
      // The delay runs while holding the turn, so checks of one e-mail are `delayMs` apart; an
      // attempt that waited out its longest wait has been slowed enough and goes now.
      const checkAt = hasTurn ? Math.min(deadline, Date.now() + delayMs) : Date.now();
      if (checkAt > Date.now()) await sleep(checkAt - Date.now());
    } catch (err) {
      // Redis is failing already (the 503 says so); the markers expire on their own.
      await finish('abandoned').catch(() => undefined);
      throw unavailable('redis', err);
    }

    return {
      async failed() {
        try {
          await finish('failed');
        } catch (err) {
          throw unavailable('redis', err);
        }
      },
      async succeeded() {
        // The password was right: markers left behind (Redis failing now) only expire later.
        await finish('succeeded').catch(() => undefined);
      },
      async abandoned() {
        await finish('abandoned').catch(() => undefined);
      },
    };
  }

  private async countAddressAttempt(address: string): Promise<void> {
    const key = `taskapi:login:ip:{${address}}`;
    let results: [Error | null, unknown][] | null;
    try {
      results = await this.redis.multi().incr(key).expire(key, LOGIN_WINDOW_SECONDS, 'NX').ttl(key).exec();
    } catch (err) {
      throw unavailable('redis', err);
    }
    if (!results) throw unavailable('redis');
    if (Number(results[0]?.[1]) > this.limits.maxAttemptsPerIp) throw limited(Number(results[2]?.[1]));
  }
}
