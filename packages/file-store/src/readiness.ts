import type { FileStore } from './file-store';

interface ReadinessLog {
  info(message: string, meta: Record<string, unknown>): void;
  error(message: string, meta: Record<string, unknown>): void;
}

/**
 * The store's part of a replica's readiness: a real write, until the first one succeeds; after that
 * it passes without I/O. The bucket is the operator's, so a replica is not ready until it has seen
 * it usable (and says so clearly at start). Once it has, an outage of the store answers 503 on the
 * routes that need it and makes task attempts retry, instead of taking every replica out of
 * service at once (and a probe every few seconds does not cost a write each).
 * @returns the check, and the first attempt (settled, for callers that start after it).
 */
export function storeReadiness(store: FileStore, log: ReadinessLog): { check: () => Promise<void>; first: Promise<void> } {
  let verified = false;
  const check = async () => {
    if (verified) return;
    await store.checkWritable();
    verified = true;
  };
  const first = check().then(
    () => log.info('file store is writable', { store: store.description }),
    (err: unknown) => log.error('file store is not usable; readiness fails until it is', { store: store.description, error: (err as Error).message }),
  );
  return { check, first };
}
