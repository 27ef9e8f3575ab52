import type pg from 'pg';
import type { Logger } from '@taskapi/logger';

// Idempotency records older than 24 h are already ignored (and overwritten on reuse); this removes
// them so the table stays small. Bounded batches keep each statement short; any number of API
// replicas may run it at once (SKIP LOCKED: they split the work instead of waiting on each other).
const PURGE_IDEMPOTENCY_SQL = `
DELETE FROM idempotency_keys WHERE ctid IN (
  SELECT ctid FROM idempotency_keys
   WHERE created_at < now() - interval '24 hours'
   LIMIT $1 FOR UPDATE SKIP LOCKED)`;

/** Deletes expired idempotency records, `batchSize` at a time; returns how many. */
export async function purgeExpiredIdempotencyKeys(pool: pg.Pool, batchSize = 5_000): Promise<number> {
  let total = 0;
  for (;;) {
    const { rowCount } = await pool.query({ name: 'purge-idempotency', text: PURGE_IDEMPOTENCY_SQL, values: [batchSize] });
    total += rowCount ?? 0;
    if ((rowCount ?? 0) < batchSize) return total;
  }
}

/** Runs the purge every `intervalMs` in the background; returns a stop function. */
export function startHousekeeping(pool: pg.Pool, logger: Logger, intervalMs = 10 * 60_000): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    purgeExpiredIdempotencyKeys(pool)
      .then((n) => n > 0 && logger.info('purged expired idempotency keys', { count: n }))
      .catch((err: unknown) => logger.warn('idempotency key purge failed', { error: err }))
      .finally(() => {
        running = false;
      });
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
