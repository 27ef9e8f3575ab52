import type { Logger } from '@taskapi/logger';
import { BoundedMap } from '../infra/bounded-map';
import type { KeyAuthRow, KeyRepository } from '../repositories/keys';
import type { KeyCache, KeyRecord } from './key-cache';
import { keyIdEntry } from './key-revocation';

const TOUCH_INTERVAL_MS = 60_000;

/** Looks API keys up by hash through the in-process cache, and keeps `last_used_at` roughly current. */
export class ApiKeyVerifier {
  private readonly lastTouched = new BoundedMap<string, number>(100_000);

  constructor(
    private readonly keys: Pick<KeyRepository, 'findByHash' | 'findAuthById' | 'activeTrialPrefixes' | 'touch'>,
    private readonly cache: KeyCache,
    private readonly logger: Logger,
  ) {}

  async lookup(hash: string): Promise<KeyRecord | null> {
    const cached = this.cache.get(hash);
    if (cached !== undefined) return cached;
    const record = asRecord(await this.keys.findByHash(hash));
    this.cache.set(hash, record);
    return record;
  }

  /**
   * The key a read token names, by id: cached like a lookup by hash (a revocation evicts both, and
   * the rate-limit script's revocation marker covers the moment before the message arrives).
   */
  async lookupById(keyId: string): Promise<KeyRecord | null> {
    const entry = keyIdEntry(keyId);
    const cached = this.cache.get(entry);
    if (cached !== undefined) return cached;
    const record = asRecord(await this.keys.findAuthById(keyId));
    this.cache.set(entry, record);
    return record;
  }

  evictById(keyId: string): void {
    this.cache.evict(keyIdEntry(keyId));
  }

  evict(hash: string): void {
    this.cache.evict(hash);
  }

  /** Prefixes of the account's other trial keys that still work (unrevoked, grant unexpired). */
  activeTrialPrefixes(accountId: string, exceptKeyId: string): Promise<string[]> {
    return this.keys.activeTrialPrefixes(accountId, exceptKeyId);
  }

  /**
   * Records use of a key. Written at most once a minute per key and replica, off the request path,
   * so `last_used_at` is accurate to about a minute.
   */
  touch(keyId: string, now = Date.now()): void {
    const last = this.lastTouched.get(keyId);
    if (last !== undefined && now - last < TOUCH_INTERVAL_MS) return;
    this.lastTouched.set(keyId, now);
    this.keys.touch(keyId).catch((err: unknown) => this.logger.warn('could not record api key use', { key_id: keyId, error: err }));
  }
}

function asRecord(row: KeyAuthRow | null): KeyRecord | null {
  return row
    ? {
        id: row.id,
        accountId: row.account_id,
        type: row.type,
        grantId: row.grant_id,
        keyPrefix: row.key_prefix,
        apiVersion: row.api_version,
        revoked: row.revoked,
        grantExpiresAt: row.grant_expires_at ? row.grant_expires_at.getTime() : null,
      }
    : null;
}
