import type { RedisClient } from '@taskapi/service';
import type { Logger } from '@taskapi/logger';
import { decryptSecret, encryptSecret, generateApiKey, type ApiKeyType } from '@taskapi/crypto';
import { newId } from '@taskapi/ids';
import { ApiError } from '../errors';
import type { GrantRepository } from '../repositories/grants';
import type { KeyQueries, KeyRepository, KeyRow, SpendLimit } from '../repositories/keys';
import { announceRevocation } from './key-revocation';

/** A key as the console API shows it: never the plaintext. */
export interface KeyView {
  id: string;
  type: ApiKeyType;
  key_prefix: string;
  status: 'active' | 'revoked' | 'expired';
  grant_id: string | null;
  created_at: string;
  last_used_at: string | null;
  revoked_at: string | null;
  /** Most credits the key may spend per UTC day or month; null: none. */
  spend_limit: SpendLimit | null;
  /** Credits charged through the key (and the keys it was reissued from) in the limit's current UTC period, refunds deducted; the month's without a limit. */
  spent: number;
}

export function keyStatus(k: Pick<KeyRow, 'revoked_at' | 'grant_expires_at'>, now = Date.now()): KeyView['status'] {
  if (k.revoked_at) return 'revoked';
  if (k.grant_expires_at && k.grant_expires_at.getTime() <= now) return 'expired';
  return 'active';
}

function view(k: KeyRow): KeyView {
  return {
    id: k.id,
    type: k.type,
    key_prefix: k.key_prefix,
    status: keyStatus(k),
    grant_id: k.grant_id,
    created_at: k.created_at.toISOString(),
    last_used_at: k.last_used_at?.toISOString() ?? null,
    revoked_at: k.revoked_at?.toISOString() ?? null,
    spend_limit: k.spend_limit_credits !== null && k.spend_limit_period !== null ? { credits: k.spend_limit_credits, period: k.spend_limit_period } : null,
    spent: k.spent,
  };
}

/** Associated data binding an encrypted key to its row. */
function keyContext(keyId: string): string {
  return `api-key:${keyId}`;
}

export interface ApiKeyDeps {
  keys: KeyRepository;
  grants: GrantRepository;
  redis: RedisClient;
  secretsKey: Buffer;
  logger: Logger;
}

/**
 * Announces a committed revocation. If Redis is down, key-authenticated requests are refused
 * anyway (the rate limiter needs Redis) and every replica clears its key cache when its subscriber
 * reconnects, so a failed announcement is logged rather than failing the request.
 */
async function announce(deps: Pick<ApiKeyDeps, 'redis' | 'logger'>, accountId: string, key: KeyRow): Promise<void> {
  try {
    await announceRevocation(deps.redis, [{ id: key.id, accountId, keyHash: key.key_hash }]);
  } catch (err) {
    deps.logger.error('could not announce key revocation', { key_id: key.id, error: err });
  }
}

/**
 * Refuses a trial grant a key cannot bind to. Read before the key's transaction, without a lock:
 * the grant's expiry never changes, and its quota may run out a moment after the check either
 * way (a key then exists for an exhausted grant, which is allowed; creation checks the quota).
 */
async function usableGrant(grants: GrantRepository, accountId: string, grantId: string): Promise<void> {
  const grant = await grants.forBinding(accountId, grantId);
  if (!grant) throw new ApiError('GRANT_NOT_FOUND');
  if (grant.expiresAt.getTime() <= Date.now()) throw new ApiError('GRANT_EXPIRED');
  if (grant.quotaRemaining <= 0) throw new ApiError('GRANT_EXHAUSTED');
}

async function insertKey(
  tx: KeyQueries,
  secretsKey: Buffer,
  accountId: string,
  type: ApiKeyType,
  grantId: string | null,
  spend: { limit: SpendLimit | null; keyId: string | null },
): Promise<{ record: KeyRow; plaintext: string }> {
  const id = newId('key');
  const generated = generateApiKey(type);
  const record = await tx.insert({
    id,
    accountId,
    type,
    grantId,
    keyHash: generated.hash,
    keyPrefix: generated.prefix,
    keyCiphertext: encryptSecret(secretsKey, generated.plaintext, keyContext(id)),
    spendLimit: spend.limit,
    spendKeyId: spend.keyId,
  });
  // At most one unrevoked key per grant, whatever the concurrency.
  if (!record) throw new ApiError('GRANT_ALREADY_BOUND');
  return { record, plaintext: generated.plaintext };
}

export async function listKeys(keys: KeyRepository, accountId: string, type?: ApiKeyType): Promise<KeyView[]> {
  return (await keys.list(accountId, type)).map(view);
}

/** Creates a paid key, or a trial key bound to an unexpired grant with quota and no active key. */
export async function createKey(
  deps: Pick<ApiKeyDeps, 'keys' | 'grants' | 'secretsKey'>,
  accountId: string,
  input: ({ type: 'paid' } | { type: 'trial'; grant_id: string }) & { spend_limit?: SpendLimit | null },
): Promise<{ key: KeyView; plaintext_key: string }> {
  if (input.type === 'trial') await usableGrant(deps.grants, accountId, input.grant_id);
  const { record, plaintext } = await deps.keys.transaction((tx) =>
    insertKey(tx, deps.secretsKey, accountId, input.type, input.type === 'trial' ? input.grant_id : null, { limit: input.spend_limit ?? null, keyId: null }),
  );
  return { key: view(record), plaintext_key: plaintext };
}

/**
 * Revokes a key; the very next request with it fails on every API replica. Revoking a revoked key
 * returns it unchanged (and repeats the announcement, which heals an earlier Redis hiccup).
 */
export async function revokeKey(deps: ApiKeyDeps, accountId: string, keyId: string): Promise<KeyView> {
  await deps.keys.revoke(accountId, keyId);
  const key = await deps.keys.find(accountId, keyId);
  if (!key) throw new ApiError('KEY_NOT_FOUND');
  await announce(deps, accountId, key);
  return view(key);
}

/** Revokes a key and creates its replacement (same type, same grant) in one transaction. */
export async function reissueKey(
  deps: ApiKeyDeps,
  accountId: string,
  keyId: string,
): Promise<{ key: KeyView; plaintext_key: string; replaced_key: KeyView }> {
  const unlocked = await deps.keys.find(accountId, keyId);
  if (!unlocked) throw new ApiError('KEY_NOT_FOUND');
  if (unlocked.revoked_at) throw new ApiError('KEY_REVOKED_NO_REISSUE');
  // A key's grant never changes.
  if (unlocked.grant_id) await usableGrant(deps.grants, accountId, unlocked.grant_id);
  const { old, created } = await deps.keys.transaction(async (tx) => {
    // Locked, so two concurrent reissues of one key cannot both succeed.
    const current = await tx.findForUpdate(accountId, keyId);
    if (!current) throw new ApiError('KEY_NOT_FOUND');
    if (current.revoked_at) throw new ApiError('KEY_REVOKED_NO_REISSUE');
    const revoked = await tx.revoke(accountId, keyId);
    if (!revoked) throw new Error(`revoking locked, unrevoked key ${keyId} changed no row`);
    // The replacement keeps the limit and continues the chain's spend counters: the period's spend carries over.
    const limit = current.spend_limit_credits !== null && current.spend_limit_period !== null ? { credits: current.spend_limit_credits, period: current.spend_limit_period } : null;
    const replacement = await insertKey(tx, deps.secretsKey, accountId, current.type, current.grant_id, { limit, keyId: current.spend_key_id ?? current.id });
    return { old: revoked, created: replacement };
  });
  await announce(deps, accountId, old);
  return { key: view(created.record), plaintext_key: created.plaintext, replaced_key: view(old) };
}

/**
 * Sets (or, with null, clears) an unrevoked key's spend limit. It applies to the very next creation
 * on every API replica: creation reads the limit in the transaction that charges, not from a cache.
 */
export async function setSpendLimit(deps: Pick<ApiKeyDeps, 'keys'>, accountId: string, keyId: string, limit: SpendLimit | null): Promise<KeyView> {
  const updated = await deps.keys.setSpendLimit(accountId, keyId, limit);
  if (updated) return view(updated);
  if (!(await deps.keys.find(accountId, keyId))) throw new ApiError('KEY_NOT_FOUND');
  throw new ApiError('KEY_REVOKED_NO_EDIT');
}

/** Shows an active key's plaintext again; every reveal is written to the audit table first. */
export async function revealKey(
  deps: ApiKeyDeps,
  accountId: string,
  keyId: string,
  audit: { ip: string | undefined; userAgent: string | undefined },
): Promise<{ plaintext_key: string }> {
  const key = await deps.keys.findWithSecret(accountId, keyId);
  if (!key) throw new ApiError('KEY_NOT_FOUND');
  if (keyStatus(key) !== 'active') throw new ApiError('KEY_NOT_ACTIVE');
  const plaintext = decryptSecret(deps.secretsKey, key.key_ciphertext, keyContext(key.id));
  await deps.keys.recordReveal(accountId, key.id, { ip: audit.ip?.slice(0, 100) ?? null, userAgent: audit.userAgent?.slice(0, 500) ?? null });
  return { plaintext_key: plaintext };
}
