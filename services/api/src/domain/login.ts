import type { RedisClient } from '@taskapi/service';
import { hashPassword, sha256Hex, verifyPassword } from '@taskapi/crypto';
import { ApiError } from '../errors';
import type { AccountLogin, AccountRepository } from '../repositories/accounts';
import { LoginThrottle, throttleAddress, type LoginLimits } from './login-throttle';

// Verified against when the e-mail is unknown, so both failures take the same time.
let dummyHash: Promise<string> | undefined;

/**
 * Checks e-mail and password behind the login throttle (see `LoginThrottle`): 429 per client
 * address and per (e-mail, address); across addresses an e-mail is only slowed down, never
 * locked. Unknown e-mails go through the same steps and cost the same time as known ones.
 * `ip` is the request's client address (`req.ip`, after `TRUST_PROXY`).
 * Returns the account, or throws 401 / 429 / 503.
 */
export async function checkLogin(
  deps: { accounts: AccountRepository; redis: RedisClient; limits: LoginLimits },
  email: string,
  password: string,
  ip: string,
): Promise<{ accountId: string; email: string; apiVersion: string }> {
  const normalized = email.trim().toLowerCase();
  const attempt = await new LoginThrottle(deps.redis, deps.limits).admit(sha256Hex(normalized), throttleAddress(ip));

  let account: AccountLogin | null;
  let ok: boolean;
  try {
    account = await deps.accounts.findForLogin(normalized);
    dummyHash ??= hashPassword('not-a-real-password');
    ok = await verifyPassword(password, account?.passwordHash ?? (await dummyHash));
  } catch (err) {
    await attempt.abandoned();
    throw err;
  }
  if (!account || !ok) {
    await attempt.failed();
    throw new ApiError('INVALID_CREDENTIALS');
  }
  await attempt.succeeded();
  return { accountId: account.id, email: account.email, apiVersion: account.apiVersion };
}
