import type pg from 'pg';
import type { Logger } from '@taskapi/logger';
import { BoundedMap } from '../infra/bounded-map';
import type { KeyCache, KeyRecord } from './key-cache';

interface KeyRow {
  id: string;
  account_id: string;
  type: 'paid' | 'trial';
  grant_id: string | null;
  key_prefix: string;
  revoked: boolean;
  grant_expires_at: Date | null;
}

const KEY_BY_HASH = `
SELECT k.id, k.account_id, k.type, k.grant_id, k.key_prefix, (k.revoked_at IS NOT NULL) AS revoked,
       g.expires_at AS grant_expires_at
  FROM api_keys k LEFT JOIN trial_grants g ON g.id = k.grant_id
 WHERE k.key_hash = $1`;

const ACTIVE_TRIAL_PREFIXES = `
SELECT k.key_prefix
  FROM api_keys k JOIN trial_grants g ON g.id = k.grant_id
 WHERE k.account_id = $1 AND k.id <> $2 AND k.type = 'trial' AND k.revoked_at IS NULL AND g.expires_at > now()
 ORDER BY k.created_at`;

const TOUCH_INTERVAL_MS = 60_000;

/** Looks API keys up by hash through the in-process cache, and keeps `last_used_at` roughly current. */
export class ApiKeyVerifier {
  private readonly lastTouched = new BoundedMap<string, number>(100_000);

  constructor(
    private readonly pool: pg.Pool,
    private readonly cache: KeyCache,
    private readonly logger: Logger,
  ) {}

  async lookup(hash: string): Promise<KeyRecord | null> {
    const cached = this.cache.get(hash);
    if (cached !== undefined) return cached;
    const { rows } = await this.pool.query<KeyRow>({ name: 'api-key-by-hash', text: KEY_BY_HASH, values: [hash] });
    const row = rows[0];
    const record: KeyRecord | null = row
      ? {
          id: row.id,
          accountId: row.account_id,
          type: row.type,
          grantId: row.grant_id,
          keyPrefix: row.key_prefix,
          revoked: row.revoked,
          grantExpiresAt: row.grant_expires_at ? row.grant_expires_at.getTime() : null,
        }
      : null;
    this.cache.set(hash, record);
    return record;
  }

  evict(hash: string): void {
    this.cache.evict(hash);
  }

  /** Prefixes of the account's other trial keys that still work (unrevoked, grant unexpired). */
  async activeTrialPrefixes(accountId: string, exceptKeyId: string): Promise<string[]> {
    const { rows } = await this.pool.query<{ key_prefix: string }>({
      name: 'active-trial-prefixes',
      text: ACTIVE_TRIAL_PREFIXES,
      values: [accountId, exceptKeyId],
    });
    return rows.map((r) => r.key_prefix);
  }

  /**
   * Records use of a key. Written at most once a minute per key and replica, off the request path,
   * so `last_used_at` is accurate to about a minute.
   */
  touch(keyId: string, now = Date.now()): void {
    const last = this.lastTouched.get(keyId);
    if (last !== undefined && now - last < TOUCH_INTERVAL_MS) return;
    this.lastTouched.set(keyId, now);
    this.pool
      .query({
        name: 'touch-api-key',
        text: `UPDATE api_keys SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '30 seconds')`,
        values: [keyId],
      })
      .catch((err: unknown) => this.logger.warn('could not record api key use', { key_id: keyId, error: err }));
  }
}
