import type { Redis } from 'ioredis';
import type { Logger } from '@taskapi/logger';
import type { PrismaClient, Prisma } from '@taskapi/db';
import { isUniqueViolation } from '@taskapi/db';
import { decryptSecret, encryptSecret, generateApiKey, type ApiKeyType } from '@taskapi/crypto';
import { newId } from '@taskapi/ids';
import { ApiError } from '../errors';
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
}

const keySelect = {
  id: true,
  type: true,
  keyPrefix: true,
  grantId: true,
  createdAt: true,
  lastUsedAt: true,
  revokedAt: true,
  keyHash: true,
  grant: { select: { expiresAt: true } },
} satisfies Prisma.ApiKeySelect;

type KeyRecord = Prisma.ApiKeyGetPayload<{ select: typeof keySelect }>;

export function keyStatus(k: Pick<KeyRecord, 'revokedAt' | 'grant'>, now = Date.now()): KeyView['status'] {
  if (k.revokedAt) return 'revoked';
  if (k.grant && k.grant.expiresAt.getTime() <= now) return 'expired';
  return 'active';
}

function view(k: KeyRecord): KeyView {
  return {
    id: k.id,
    type: k.type,
    key_prefix: k.keyPrefix,
    status: keyStatus(k),
    grant_id: k.grantId,
    created_at: k.createdAt.toISOString(),
    last_used_at: k.lastUsedAt?.toISOString() ?? null,
    revoked_at: k.revokedAt?.toISOString() ?? null,
  };
}

/** Associated data binding an encrypted key to its row. */
function keyContext(keyId: string): string {
  return `api-key:${keyId}`;
}

export interface ApiKeyDeps {
  prisma: PrismaClient;
  redis: Redis;
  secretsKey: Buffer;
  logger: Logger;
}

/**
 * Announces a committed revocation. If Redis is down, key-authenticated requests are refused
 * anyway (the rate limiter needs Redis) and every replica clears its key cache when its subscriber
 * reconnects, so a failed announcement is logged rather than failing the request.
 */
async function announce(deps: ApiKeyDeps, accountId: string, key: KeyRecord): Promise<void> {
  try {
    await announceRevocation(deps.redis, [{ id: key.id, accountId, keyHash: key.keyHash }]);
  } catch (err) {
    deps.logger.error('could not announce key revocation', { key_id: key.id, error: err });
  }
}

type Tx = Prisma.TransactionClient;

async function usableGrant(tx: Tx, accountId: string, grantId: string): Promise<void> {
  const grant = await tx.trialGrant.findFirst({ where: { id: grantId, accountId }, select: { expiresAt: true, quotaRemaining: true } });
  if (!grant) throw new ApiError('GRANT_NOT_FOUND');
  if (grant.expiresAt.getTime() <= Date.now()) throw new ApiError('GRANT_EXPIRED');
  if (grant.quotaRemaining <= 0) throw new ApiError('GRANT_EXHAUSTED');
}

async function insertKey(
  tx: Tx,
  secretsKey: Buffer,
  accountId: string,
  type: ApiKeyType,
  grantId: string | null,
): Promise<{ record: KeyRecord; plaintext: string }> {
  const id = newId('key');
  const generated = generateApiKey(type);
  try {
    const record = await tx.apiKey.create({
      data: {
        id,
        accountId,
        type,
        grantId,
        keyHash: generated.hash,
        keyPrefix: generated.prefix,
        keyCiphertext: encryptSecret(secretsKey, generated.plaintext, keyContext(id)),
      },
      select: keySelect,
    });
    return { record, plaintext: generated.plaintext };
  } catch (err) {
    // The partial unique index: at most one unrevoked key per grant, whatever the concurrency.
    if (isUniqueViolation(err)) throw new ApiError('GRANT_ALREADY_BOUND');
    throw err;
  }
}

export async function listKeys(prisma: PrismaClient, accountId: string, type?: ApiKeyType): Promise<KeyView[]> {
  const keys = await prisma.apiKey.findMany({
    where: { accountId, ...(type ? { type } : {}) },
    select: keySelect,
    orderBy: [{ createdAt: 'desc' }, { id: 'desc' }],
  });
  return keys.map(view);
}

/** Creates a paid key, or a trial key bound to an unexpired grant with quota and no active key. */
export async function createKey(
  deps: Pick<ApiKeyDeps, 'prisma' | 'secretsKey'>,
  accountId: string,
  input: { type: 'paid' } | { type: 'trial'; grant_id: string },
): Promise<{ key: KeyView; plaintext_key: string }> {
  const { record, plaintext } = await deps.prisma.$transaction(async (tx) => {
    if (input.type === 'trial') await usableGrant(tx, accountId, input.grant_id);
    return insertKey(tx, deps.secretsKey, accountId, input.type, input.type === 'trial' ? input.grant_id : null);
  });
  return { key: view(record), plaintext_key: plaintext };
}

async function findKey(prisma: PrismaClient | Tx, accountId: string, keyId: string): Promise<KeyRecord> {
  const key = await prisma.apiKey.findFirst({ where: { id: keyId, accountId }, select: keySelect });
  if (!key) throw new ApiError('KEY_NOT_FOUND');
  return key;
}

/**
 * Revokes a key; the very next request with it fails on every API replica. Revoking a revoked key
 * returns it unchanged (and repeats the announcement, which heals an earlier Redis hiccup).
 */
export async function revokeKey(deps: ApiKeyDeps, accountId: string, keyId: string): Promise<KeyView> {
  await deps.prisma.apiKey.updateMany({ where: { id: keyId, accountId, revokedAt: null }, data: { revokedAt: new Date() } });
  const key = await findKey(deps.prisma, accountId, keyId);
  await announce(deps, accountId, key);
  return view(key);
}

/** Revokes a key and creates its replacement (same type, same grant) in one transaction. */
export async function reissueKey(
  deps: ApiKeyDeps,
  accountId: string,
  keyId: string,
): Promise<{ key: KeyView; plaintext_key: string; replaced_key: KeyView }> {
  const { old, created } = await deps.prisma.$transaction(async (tx) => {
    // Lock the row so two concurrent reissues of one key cannot both succeed.
    const locked = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM api_keys WHERE id = ${keyId} AND account_id = ${accountId} FOR UPDATE`;
    if (locked.length === 0) throw new ApiError('KEY_NOT_FOUND');
    const current = await findKey(tx, accountId, keyId);
    if (current.revokedAt) throw new ApiError('KEY_REVOKED_NO_REISSUE');
    if (current.grantId) await usableGrant(tx, accountId, current.grantId);
    const revoked = await tx.apiKey.update({ where: { id: keyId }, data: { revokedAt: new Date() }, select: keySelect });
    const replacement = await insertKey(tx, deps.secretsKey, accountId, current.type, current.grantId);
    return { old: revoked, created: replacement };
  });
  await announce(deps, accountId, old);
  return { key: view(created.record), plaintext_key: created.plaintext, replaced_key: view(old) };
}

/** Shows an active key's plaintext again; every reveal is written to the audit table first. */
export async function revealKey(
  deps: ApiKeyDeps,
  accountId: string,
  keyId: string,
  audit: { ip: string | undefined; userAgent: string | undefined },
): Promise<{ plaintext_key: string }> {
  const key = await deps.prisma.apiKey.findFirst({
    where: { id: keyId, accountId },
    select: { ...keySelect, keyCiphertext: true },
  });
  if (!key) throw new ApiError('KEY_NOT_FOUND');
  if (keyStatus(key) !== 'active') throw new ApiError('KEY_NOT_ACTIVE');
  const plaintext = decryptSecret(deps.secretsKey, key.keyCiphertext, keyContext(key.id));
  await deps.prisma.apiKeyReveal.create({
    data: { apiKeyId: key.id, accountId, ip: audit.ip?.slice(0, 100), userAgent: audit.userAgent?.slice(0, 500) },
  });
  return { plaintext_key: plaintext };
}
