import type { Logger } from '@taskapi/logger';
import type { IdempotencyRepository } from '../repositories/idempotency';

// Idempotency records older than 24 h are already ignored (and overwritten on reuse); this removes
// them so the table stays small, in bounded batches so each statement stays short.

/** Deletes expired idempotency records, `batchSize` at a time; returns how many. */
export async function purgeExpiredIdempotencyKeys(idempotency: Pick<IdempotencyRepository, 'purgeExpired'>, batchSize = 5_000): Promise<number> {
  let total = 0;
  for (;;) {
    const deleted = await idempotency.purgeExpired(batchSize);
    total += deleted;
    if (deleted < batchSize) return total;
  }
}

/** Runs the purge every `intervalMs` in the background; returns a stop function. */
export function startHousekeeping(idempotency: Pick<IdempotencyRepository, 'purgeExpired'>, logger: Logger, intervalMs = 10 * 60_000): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    purgeExpiredIdempotencyKeys(idempotency)
      .then((n) => n > 0 && logger.info('purged expired idempotency keys', { count: n }))
      .catch((err: unknown) => logger.warn('idempotency key purge failed', { error: err }))
      .finally(() => {
        running = false;
      });
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
