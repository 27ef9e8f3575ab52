import type { RedisClient } from '@taskapi/service';
import type { Logger } from '@taskapi/logger';
import { BoundedMap } from '../infra/bounded-map';
import { KEY_EVENTS_CHANNEL } from './key-revocation';

/** What the API needs to know about a key on every request; never the key itself. */
export interface KeyRecord {
  id: string;
  accountId: string;
  type: 'paid' | 'trial';
  grantId: string | null;
  keyPrefix: string;
  revoked: boolean;
  /** The account's pinned API version (fixed when the account is created). */
  apiVersion: string;
  /** Expiry of the bound trial grant (ms since epoch); null for paid keys. */
  grantExpiresAt: number | null;
}

interface Entry {
  record: KeyRecord | null;
  storedAt: number;
}

export interface KeyCacheOptions {
  /** Entries older than this are looked up again. */
  maxAgeMs?: number;
  /** Unknown keys are remembered for this long (a flood of bad keys does not reach PostgreSQL). */
  negativeMaxAgeMs?: number;
  maxEntries?: number;
}

/**
 * In-process cache of key lookups by hash. Revocations evict entries on every replica through Redis
 * pub/sub; the rate-limit script's revocation marker covers the moment before the message arrives.
 * When the subscription drops, everything is evicted (messages may have been missed).
 */
export class KeyCache {
  private readonly entries: BoundedMap<string, Entry>;
  private readonly maxAgeMs: number;
  private readonly negativeMaxAgeMs: number;

  constructor(opts: KeyCacheOptions = {}) {
    this.maxAgeMs = opts.maxAgeMs ?? 60_000;
    this.negativeMaxAgeMs = opts.negativeMaxAgeMs ?? 5_000;
    this.entries = new BoundedMap(opts.maxEntries ?? 50_000);
  }

  /** `undefined`: not cached; `null`: cached as unknown. */
  get(hash: string, now = Date.now()): KeyRecord | null | undefined {
    const e = this.entries.get(hash);
    if (!e) return undefined;
    const maxAge = e.record ? this.maxAgeMs : this.negativeMaxAgeMs;
    if (now - e.storedAt > maxAge) {
      this.entries.delete(hash);
      return undefined;
    }
    return e.record;
  }

  set(hash: string, record: KeyRecord | null, now = Date.now()): void {
    this.entries.set(hash, { record, storedAt: now });
  }

  evict(hash: string): void {
    this.entries.delete(hash);
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }

  /** Subscribes `subscriber` (a dedicated connection) to revocation messages. */
  async listen(subscriber: RedisClient, logger: Logger): Promise<void> {
    subscriber.on('message', (channel: string, hash: string) => {
      if (channel === KEY_EVENTS_CHANNEL) this.evict(hash);
    });
    let connectedBefore = false;
    subscriber.on('ready', () => {
      // A reconnect may have missed messages.
      if (connectedBefore) {
        this.clear();
        logger.warn('key cache cleared after Redis subscriber reconnect');
      }
      connectedBefore = true;
    });
    if (subscriber.status === 'ready') connectedBefore = true;
    await subscriber.subscribe(KEY_EVENTS_CHANNEL);
  }
}
