import { encryptSecret, generateWebhookSecret, hashPassword, webhookSecretContext } from '@taskapi/crypto';
import { newId } from '@taskapi/ids';
import { MAX_ACCOUNT_CAP } from '@taskapi/scheduler';
import { ApiError } from '../errors';
import type { Repositories } from '../repositories';
import { NEWEST_VERSION } from '../versions/registry';

// Deliberately simple: one @, no spaces, a dot in the domain. Deliverability is the operator's job.
const EMAIL_PATTERN = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
export const MIN_PASSWORD_LENGTH = 8;
export const MAX_PASSWORD_LENGTH = 1024;

/** Lower-cased, trimmed e-mail, or a 400 when it is not an address. */
export function normalizeEmail(email: string): string {
  const e = email.trim().toLowerCase();
  if (e.length > 254 || !EMAIL_PATTERN.test(e)) throw new ApiError('INVALID_ARGUMENT', { params: { name: 'email', problem: 'must be a valid e-mail address' } });
  return e;
}

export interface CreatedAccount {
  account_id: string;
  email: string;
  paid_balance: number;
}

export async function createAccount(
  repos: Pick<Repositories, 'accounts'>,
  secretsKey: Buffer,
  input: { email: string; credits?: number; /** Default: the newest shipped version. */ apiVersion?: string } & ({ password: string } | { passwordHash: string }),
): Promise<CreatedAccount> {
  const email = normalizeEmail(input.email);
  const credits = input.credits ?? 0;
  if (!Number.isSafeInteger(credits) || credits < 0) throw new ApiError('INVALID_ARGUMENT', { params: { name: 'credits', problem: 'must be a whole number of at least 0' } });
  let passwordHash: string;
  if ('password' in input) {
    if (input.password.length < MIN_PASSWORD_LENGTH || input.password.length > MAX_PASSWORD_LENGTH) {
      throw new ApiError('INVALID_ARGUMENT', {
        params: { name: 'password', problem: `must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters` },
      });
    }
    passwordHash = await hashPassword(input.password);
  } else {
    passwordHash = input.passwordHash;
  }
  const id = newId('account');
  const webhookSecretCiphertext = encryptSecret(secretsKey, generateWebhookSecret(), webhookSecretContext(id));
  // Pinned now: a later version never changes what this account's clients get unless they ask (docs/api.md, "Versions").
  const created = await repos.accounts.create({ id, email, passwordHash, webhookSecretCiphertext, apiVersion: input.apiVersion ?? NEWEST_VERSION }, credits);
  if (!created) throw new ApiError('ACCOUNT_EXISTS');
  return { account_id: id, email, paid_balance: credits };
}

async function accountIdByEmail(repos: Pick<Repositories, 'accounts'>, email: string): Promise<string> {
  const accountId = await repos.accounts.idByEmail(normalizeEmail(email));
  if (!accountId) throw new ApiError('ACCOUNT_NOT_FOUND');
  return accountId;
}

/** Adds paid credits (with a ledger row, in one transaction); returns the new balance. */
export async function addCredits(repos: Pick<Repositories, 'accounts'>, email: string, amount: number): Promise<{ paid_balance: number }> {
  if (!Number.isSafeInteger(amount) || amount < 1) throw new ApiError('INVALID_ARGUMENT', { params: { name: 'amount', problem: 'must be a whole number of at least 1' } });
  const accountId = await accountIdByEmail(repos, email);
  return { paid_balance: await repos.accounts.addCredits(accountId, amount) };
}

/** Grants an expiring trial quota (with a ledger row, in one transaction). */
export async function grantTrial(
  repos: Pick<Repositories, 'accounts' | 'grants'>,
  email: string,
  quota: number,
  expiresAt: Date,
): Promise<{ grant_id: string; quota: number; expires_at: string }> {
  if (!Number.isSafeInteger(quota) || quota < 1) throw new ApiError('INVALID_ARGUMENT', { params: { name: 'quota', problem: 'must be a whole number of at least 1' } });
  if (Number.isNaN(expiresAt.getTime())) throw new ApiError('INVALID_ARGUMENT', { params: { name: 'expires_at', problem: 'must be a valid date' } });
  if (expiresAt.getTime() <= Date.now()) throw new ApiError('INVALID_ARGUMENT', { params: { name: 'expires_at', problem: 'must be in the future' } });
  const accountId = await accountIdByEmail(repos, email);
  const id = newId('grant');
  await repos.grants.create({ id, accountId, quota, expiresAt });
  return { grant_id: id, quota, expires_at: expiresAt.toISOString() };
}

/**
 * Sets an account's own cap of running tasks (`null`: back to the default, `ACCOUNT_MAX_RUNNING`).
 * The workers read it from the database about once a second (docs/fair-scheduling.md).
 * Returns the cap in force afterwards.
 */
export async function setMaxRunning(
  repos: Pick<Repositories, 'accounts'>,
  email: string,
  maxRunning: number | null,
  defaultMaxRunning: number,
): Promise<{ account_id: string; max_running: number }> {
  if (maxRunning !== null && (!Number.isSafeInteger(maxRunning) || maxRunning < 1 || maxRunning > MAX_ACCOUNT_CAP)) {
    throw new ApiError('INVALID_ARGUMENT', { params: { name: 'max', problem: `must be a whole number from 1 to ${MAX_ACCOUNT_CAP}` } });
  }
  const accountId = await accountIdByEmail(repos, email);
  await repos.accounts.setMaxRunning(accountId, maxRunning);
  return { account_id: accountId, max_running: maxRunning ?? defaultMaxRunning };
}
