import type { RedisClient } from '@taskapi/service';

/**
 * Pub/sub channel on which API replicas hear about revoked keys (messages: the key's hash, and its
 * id entry `keyIdEntry`, the two ways the key cache holds a key).
 */
export const KEY_EVENTS_CHANNEL = 'taskapi:api-key-revoked';

/** The key cache's entry of a key looked up by id (a read token's); hashes are hex, so the two never meet. */
export const keyIdEntry = (keyId: string) => `id:${keyId}`;

// The marker outlives any cached copy of the key (KeyCache.maxAgeMs) by a wide margin.
const MARKER_TTL_SECONDS = 24 * 3600;

/** Shares the rate-limit keys' hash tag (the account), so the rate-limit script can read it in the same slot. */
export function revokedMarkerKey(accountId: string, keyId: string): string {
  return `taskapi:apikey:{${accountId}}:${keyId}:revoked`;
}

/**
 * Makes a revocation visible to every API replica before the revoking request returns:
 *  - the marker is checked by the rate-limit script on every key-authenticated request, so the very
 *    next request anywhere is refused even if a replica still holds the key in its cache;
 *  - the pub/sub message evicts the key from every replica's cache.
 * Call after the revocation has committed in PostgreSQL.
 */
export async function announceRevocation(
  redis: RedisClient,
  keys: ReadonlyArray<{ id: string; accountId: string; keyHash: string }>,
): Promise<void> {
  // One MULTI per account: its markers share the account's hash tag (one cluster slot), and the
  // messages follow the markers, so a replica that hears one already sees the marker.
  const byAccount = new Map<string, Array<{ id: string; keyHash: string }>>();
  for (const k of keys) byAccount.set(k.accountId, [...(byAccount.get(k.accountId) ?? []), k]);
  await Promise.all(
    [...byAccount].map(async ([accountId, accountKeys]) => {
      const multi = redis.multi();
      for (const k of accountKeys) multi.set(revokedMarkerKey(accountId, k.id), '1', 'EX', MARKER_TTL_SECONDS);
      for (const k of accountKeys) multi.publish(KEY_EVENTS_CHANNEL, k.keyHash);
      // Its lookup by id (a read token's), too.
      for (const k of accountKeys) multi.publish(KEY_EVENTS_CHANNEL, keyIdEntry(k.id));
      await multi.exec();
    }),
  );
}
