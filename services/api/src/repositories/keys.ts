// API keys (`api_keys`, `api_key_reveals`): raw SQL on the pg pool, for every statement. The
// lookup by hash runs on every key-cache miss, unknown keys included; as a named statement it takes
// about 0.1 ms, the typed client's findUnique with the grant about 0.6 ms. The console's key
// management uses the same style, so the table is written one way. A key's reads carry its trial
// grant's expiry by a join (one round trip on the hot path); every statement about a grant itself
// is in grants.ts.
import type pg from 'pg';
import { z } from 'zod';
import { execute, queryFirst, queryRows, statement, transaction, type SqlExecutor } from '@taskapi/db';

const keyType = z.enum(['paid', 'trial']);

// ---- Hot path: authentication of `X-Api-Key` ----

/** The facts authentication needs of a key, with its trial grant's expiry and its account's version. */
const KEY_AUTH_SELECT = `
SELECT k.id, k.account_id, k.type, k.grant_id, k.key_prefix, (k.revoked_at IS NOT NULL) AS revoked,
       g.expires_at AS grant_expires_at, a.api_version
  FROM api_keys k JOIN accounts a ON a.id = k.account_id LEFT JOIN trial_grants g ON g.id = k.grant_id`;

const KEY_BY_HASH = statement(
  'api-key-by-hash',
  `${KEY_AUTH_SELECT}
 WHERE k.key_hash = $1`,
  z.object({
    id: z.string(),
    account_id: z.string(),
    type: keyType,
    grant_id: z.string().nullable(),
    key_prefix: z.string(),
    revoked: z.boolean(),
    /** Expiry of the bound trial grant; null for paid keys. */
    grant_expires_at: z.date().nullable(),
    /** The account's pinned API version. */
    api_version: z.string(),
  }),
);

/** What authentication needs to know about a key. */
export type KeyAuthRow = z.output<typeof KEY_BY_HASH.row>;

// The same facts by id: a read token names its minting key by id (docs/architecture.md, "Browser read tokens").
const KEY_BY_ID = statement(
  'api-key-by-id',
  `${KEY_AUTH_SELECT}
 WHERE k.id = $1`,
  KEY_BY_HASH.row,
);

const ACTIVE_TRIAL_PREFIXES = statement(
  'active-trial-prefixes',
  `
SELECT k.key_prefix
  FROM api_keys k JOIN trial_grants g ON g.id = k.grant_id
 WHERE k.account_id = $1 AND k.id <> $2 AND k.type = 'trial' AND k.revoked_at IS NULL AND g.expires_at > now()
 ORDER BY k.created_at`,
  z.object({ key_prefix: z.string() }),
);

const TOUCH_SQL = `UPDATE api_keys SET last_used_at = now() WHERE id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '30 seconds')`;

// ---- Console: key management ----

// `spent`: the key chain's spend in the limit's current UTC period (the month when there is no limit).
const KEY_COLUMNS = `k.id, k.type, k.key_prefix, k.grant_id, k.created_at, k.last_used_at, k.revoked_at, k.key_hash,
       g.expires_at AS grant_expires_at, k.spend_limit_credits, k.spend_limit_period::text AS spend_limit_period, k.spend_key_id,
       (SELECT COALESCE(sum(s.spent), 0) FROM api_key_spend s
         WHERE s.key_id = COALESCE(k.spend_key_id, k.id)
           AND s.day >= CASE WHEN k.spend_limit_period = 'day' THEN (now() AT TIME ZONE 'UTC')::date
                             ELSE date_trunc('month', now() AT TIME ZONE 'UTC')::date END)::int8::text AS spent`;

/** The columns a statement's `k` CTE returns, for KEY_COLUMNS. */
const RETURNED = 'id, type, key_prefix, grant_id, created_at, last_used_at, revoked_at, key_hash, spend_limit_credits, spend_limit_period, spend_key_id';

const keyRow = z.object({
  id: z.string(),
  type: keyType,
  key_prefix: z.string(),
  grant_id: z.string().nullable(),
  created_at: z.date(),
  last_used_at: z.date().nullable(),
  revoked_at: z.date().nullable(),
  /** Hex SHA-256 of the key: what revocation announcements name. */
  key_hash: z.string(),
  grant_expires_at: z.date().nullable(),
  /** Credits per `spend_limit_period`, or null: no limit. */
  spend_limit_credits: z.number().nullable(),
  spend_limit_period: z.enum(['day', 'month']).nullable(),
  /** The first key of the key's reissue chain, whose spend counters it continues; null: its own. */
  spend_key_id: z.string().nullable(),
  /** Spent in the limit's current UTC period (the month without a limit); int8 as text. */
  spent: z.string().transform(Number),
});

/** A key as the console manages it (never the key itself). */
export type KeyRow = z.output<typeof keyRow>;

const LIST_KEYS = statement(
  'list-api-keys',
  `
SELECT ${KEY_COLUMNS}
  FROM api_keys k LEFT JOIN trial_grants g ON g.id = k.grant_id
 WHERE k.account_id = $1 AND ($2::api_key_type IS NULL OR k.type = $2::api_key_type)
 ORDER BY k.created_at DESC, k.id DESC`,
  keyRow,
);

const FIND_KEY = statement(
  'find-api-key',
  `SELECT ${KEY_COLUMNS} FROM api_keys k LEFT JOIN trial_grants g ON g.id = k.grant_id WHERE k.id = $1 AND k.account_id = $2`,
  keyRow,
);

const LOCK_KEY = statement(
  'lock-api-key',
  `SELECT ${KEY_COLUMNS} FROM api_keys k LEFT JOIN trial_grants g ON g.id = k.grant_id WHERE k.id = $1 AND k.account_id = $2 FOR UPDATE OF k`,
  keyRow,
);

const FIND_KEY_SECRET = statement(
  'find-api-key-secret',
  `SELECT ${KEY_COLUMNS}, k.key_ciphertext FROM api_keys k LEFT JOIN trial_grants g ON g.id = k.grant_id WHERE k.id = $1 AND k.account_id = $2`,
  keyRow.extend({ key_ciphertext: z.string() }),
);

/** A key with its encrypted plaintext (for "show key"). */
export type KeySecretRow = z.output<typeof FIND_KEY_SECRET.row>;

const REVOKE_KEY = statement(
  'revoke-api-key',
  `
WITH k AS (
  UPDATE api_keys SET revoked_at = $3 WHERE id = $1 AND account_id = $2 AND revoked_at IS NULL
  RETURNING ${RETURNED})
SELECT ${KEY_COLUMNS} FROM k LEFT JOIN trial_grants g ON g.id = k.grant_id`,
  keyRow,
);

// The partial unique index allows one unrevoked key per grant, whatever the concurrency: a second
// insert for the grant waits for the first to commit, then inserts nothing.
const INSERT_KEY = statement(
  'insert-api-key',
  `
WITH k AS (
  INSERT INTO api_keys (id, account_id, type, grant_id, key_hash, key_prefix, key_ciphertext, spend_limit_credits, spend_limit_period, spend_key_id)
  VALUES ($1, $2, $3::api_key_type, $4, $5, $6, $7, $8, $9::spend_period, $10)
  ON CONFLICT (grant_id) WHERE revoked_at IS NULL DO NOTHING
  RETURNING ${RETURNED})
SELECT ${KEY_COLUMNS} FROM k LEFT JOIN trial_grants g ON g.id = k.grant_id`,
  keyRow,
);

// Only an unrevoked key's limit changes; the spend counters stay (a lower limit may be passed already).
const SET_SPEND_LIMIT = statement(
  'set-api-key-spend-limit',
  `
WITH k AS (
  UPDATE api_keys SET spend_limit_credits = $3, spend_limit_period = $4::spend_period
   WHERE id = $1 AND account_id = $2 AND revoked_at IS NULL
  RETURNING ${RETURNED})
SELECT ${KEY_COLUMNS} FROM k LEFT JOIN trial_grants g ON g.id = k.grant_id`,
  keyRow,
);

const INSERT_REVEAL_SQL = `INSERT INTO api_key_reveals (api_key_id, account_id, ip, user_agent) VALUES ($1, $2, $3, $4)`;

export interface NewKey {
  id: string;
  accountId: string;
  type: 'paid' | 'trial';
  /** Set exactly for trial keys. */
  grantId: string | null;
  keyHash: string;
  keyPrefix: string;
  keyCiphertext: string;
  spendLimit: SpendLimit | null;
  /** The reissue chain's first key, whose spend counters the new key continues; null: its own. */
  spendKeyId: string | null;
}

/** Most credits a key may spend per UTC day or month. */
export interface SpendLimit {
  credits: number;
  period: 'day' | 'month';
}

/** The key statements, on the pool or inside a transaction (`KeyRepository.transaction`). */
export class KeyQueries {
  constructor(protected readonly db: SqlExecutor) {}

  /** The key with this hash, or null. */
  findByHash(hash: string): Promise<KeyAuthRow | null> {
    return queryFirst(this.db, KEY_BY_HASH, [hash]);
  }

  findAuthById(keyId: string): Promise<KeyAuthRow | null> {
    return queryFirst(this.db, KEY_BY_ID, [keyId]);
  }

  /** Prefixes of the account's other trial keys that still work (unrevoked, grant unexpired), oldest first. */
  async activeTrialPrefixes(accountId: string, exceptKeyId: string): Promise<string[]> {
    return (await queryRows(this.db, ACTIVE_TRIAL_PREFIXES, [accountId, exceptKeyId])).map((r) => r.key_prefix);
  }

  /** Sets `last_used_at` to now unless it was set in the last 30 seconds. */
  async touch(keyId: string): Promise<void> {
    await execute(this.db, 'touch-api-key', TOUCH_SQL, [keyId]);
  }

  /** The account's keys (optionally of one type), newest first. */
  list(accountId: string, type?: 'paid' | 'trial'): Promise<KeyRow[]> {
    return queryRows(this.db, LIST_KEYS, [accountId, type ?? null]);
  }

  find(accountId: string, keyId: string): Promise<KeyRow | null> {
    return queryFirst(this.db, FIND_KEY, [keyId, accountId]);
  }

  /** `find`, locking the key's row until the transaction ends (two concurrent reissues: one waits). */
  findForUpdate(accountId: string, keyId: string): Promise<KeyRow | null> {
    return queryFirst(this.db, LOCK_KEY, [keyId, accountId]);
  }

  findWithSecret(accountId: string, keyId: string): Promise<KeySecretRow | null> {
    return queryFirst(this.db, FIND_KEY_SECRET, [keyId, accountId]);
  }

  /** Revokes the key now; null when it is unknown or was already revoked. */
  revoke(accountId: string, keyId: string): Promise<KeyRow | null> {
    return queryFirst(this.db, REVOKE_KEY, [keyId, accountId, new Date()]);
  }

  /** Inserts a key; null when its trial grant already has an unrevoked key. */
  insert(key: NewKey): Promise<KeyRow | null> {
    return queryFirst(this.db, INSERT_KEY, [
      key.id,
      key.accountId,
      key.type,
      key.grantId,
      key.keyHash,
      key.keyPrefix,
      key.keyCiphertext,
      key.spendLimit?.credits ?? null,
      key.spendLimit?.period ?? null,
      key.spendKeyId,
    ]);
  }

  /** Sets or clears an unrevoked key's spend limit; null when the key is unknown or revoked. */
  setSpendLimit(accountId: string, keyId: string, limit: SpendLimit | null): Promise<KeyRow | null> {
    return queryFirst(this.db, SET_SPEND_LIMIT, [keyId, accountId, limit?.credits ?? null, limit?.period ?? null]);
  }

  /** Writes the audit row of a "show key". */
  async recordReveal(accountId: string, keyId: string, audit: { ip: string | null; userAgent: string | null }): Promise<void> {
    await execute(this.db, 'insert-api-key-reveal', INSERT_REVEAL_SQL, [keyId, accountId, audit.ip, audit.userAgent]);
  }
}

export class KeyRepository extends KeyQueries {
  constructor(private readonly pool: pg.Pool) {
    super(pool);
  }

  /** Runs `fn` in one transaction: it commits when `fn` resolves and rolls back when it throws. */
  transaction<T>(fn: (tx: KeyQueries) => Promise<T>): Promise<T> {
    return transaction(this.pool, async (client) => ({ commit: true, value: await fn(new KeyQueries(client)) }));
  }
}
