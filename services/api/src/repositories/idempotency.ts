// `Idempotency-Key` records (`idempotency_keys`): raw SQL on the pg pool (task creation's hot path).
// A record lives 24 h: older ones are ignored, taken over on reuse, and purged in the background.
import { z } from 'zod';
import { execute, queryFirst, statement, type SqlExecutor } from '@taskapi/db';

const FIND = statement(
  'find-idempotency-key',
  `
SELECT fingerprint, task_id, batch_task_ids::text AS batch_task_ids FROM idempotency_keys
 WHERE account_id = $1 AND key = $2 AND created_at > now() - interval '24 hours'`,
  z.object({
    fingerprint: z.string(),
    task_id: z.string(),
    /** A batch's task ids in order (JSON text of an array of strings); null for one task. */
    batch_task_ids: z
      .string()
      .nullable()
      .transform((t) => (t === null ? null : z.array(z.string()).parse(JSON.parse(t)))),
  }),
);

/** A live record: the request it was first used for (`fingerprint`) and the task(s) it created. */
export type IdempotencyRecord = z.output<typeof FIND.row>;

// Inserts the key, or takes over a record older than 24 h; returns nothing when a live record exists.
const CLAIM_SQL = `
INSERT INTO idempotency_keys (account_id, key, fingerprint, task_id, batch_task_ids) VALUES ($1, $2, $3, $4, $5::json)
ON CONFLICT (account_id, key) DO UPDATE
   SET fingerprint = EXCLUDED.fingerprint, task_id = EXCLUDED.task_id, batch_task_ids = EXCLUDED.batch_task_ids, created_at = now()
 WHERE idempotency_keys.created_at <= now() - interval '24 hours'
RETURNING task_id`;

// Bounded batches keep each statement short; any number of API replicas may run it at once
// (SKIP LOCKED: they split the work instead of waiting on each other).
const PURGE_SQL = `
DELETE FROM idempotency_keys WHERE ctid IN (
  SELECT ctid FROM idempotency_keys
   WHERE created_at < now() - interval '24 hours'
   LIMIT $1 FOR UPDATE SKIP LOCKED)`;

export class IdempotencyRepository {
  /** @param db the pool, or a transaction's client (task creation claims its key in its transaction) */
  constructor(private readonly db: SqlExecutor) {}

  /** The account's live record of `key`, or null. */
  find(accountId: string, key: string): Promise<IdempotencyRecord | null> {
    return queryFirst(this.db, FIND, [accountId, key]);
  }

  /**
   * Records `key` for `taskId` (a batch: its first task, and `batchTaskIds` all of them in order);
   * false when a live record of the key exists. Blocks while a concurrent transaction holds the
   * same key, then sees its committed record.
   */
  async claim(accountId: string, key: string, fingerprint: string, taskId: string, batchTaskIds?: readonly string[]): Promise<boolean> {
    const batch = batchTaskIds ? JSON.stringify(batchTaskIds) : null;
    return (await execute(this.db, 'claim-idempotency-key', CLAIM_SQL, [accountId, key, fingerprint, taskId, batch])) === 1;
  }

  /** Deletes up to `limit` records older than 24 h; returns how many. */
  purgeExpired(limit: number): Promise<number> {
    return execute(this.db, 'purge-idempotency', PURGE_SQL, [limit]);
  }
}
