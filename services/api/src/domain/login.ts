import type { Redis } from 'ioredis';
import { hashPassword, sha256Hex, verifyPassword } from '@taskapi/crypto';
import { ApiError, unavailable } from '../errors';
import type { AccountRepository } from '../repositories/accounts';

const WINDOW_SECONDS = 15 * 60;

export interface LoginLimits {
  maxFailuresPerEmail: number;
  maxAttemptsPerIp: number;
}

// Verified against when the e-mail is unknown, so both failures take the same time.
let dummyHash: Promise<string> | undefined;

/**
 * Checks e-mail and password with throttling: every attempt counts per client IP, failures count
 * per e-mail (a success clears them), both in 15-minute windows in Redis.
 * Returns the account id, or throws 401 / 429.
 */
export async function checkLogin(
  deps: { accounts: AccountRepository; redis: Redis; limits: LoginLimits },
  email: string,
  password: string,
  ip: string,
): Promise<{ accountId: string; email: string }> {
  const normalized = email.trim().toLowerCase();
  const ipKey = `taskapi:login:ip:${ip}`;
  const emailKey = `taskapi:login:email:${sha256Hex(normalized)}`;

  let results: [Error | null, unknown][] | null;
  try {
    results = await deps.redis
      .multi()
      .incr(ipKey)
      .expire(ipKey, WINDOW_SECONDS, 'NX')
      .ttl(ipKey)
      .get(emailKey)
      .ttl(emailKey)
      .exec();
  } catch (err) {
    throw unavailable('redis', err);
  }
  if (!results) throw unavailable('redis');
  const ipCount = Number(results[0]?.[1]);
  const ipTtl = Number(results[2]?.[1]);
  const emailFailures = Number(results[3]?.[1] ?? 0);
  const emailTtl = Number(results[4]?.[1]);
  const limited = (ttl: number) => new ApiError('TOO_MANY_LOGIN_ATTEMPTS', { fields: { retry_after: Math.max(1, ttl) } });
  if (ipCount > deps.limits.maxAttemptsPerIp) throw limited(ipTtl);
  if (emailFailures >= deps.limits.maxFailuresPerEmail) throw limited(emailTtl);

  const account = await deps.accounts.findForLogin(normalized);
  dummyHash ??= hashPassword('not-a-real-password');
  const ok = await verifyPassword(password, account?.passwordHash ?? (await dummyHash));
  if (!account || !ok) {
    await deps.redis.multi().incr(emailKey).expire(emailKey, WINDOW_SECONDS, 'NX').exec().catch(() => undefined);
    throw new ApiError('INVALID_CREDENTIALS');
  }
  await deps.redis.del(emailKey).catch(() => undefined);
  return { accountId: account.id, email: account.email };
}
