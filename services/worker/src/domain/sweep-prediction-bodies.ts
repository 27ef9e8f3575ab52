import { readPrediction, type PredictionRedis } from '@taskapi/domain';
import type { FileStore } from '@taskapi/file-store';

/** Where the API stores model webhook bodies too large to keep in Redis: `predictions/<public_id>/<file>`. */
export const PREDICTION_BODIES_PREFIX = 'predictions/';

/** A body younger than this may belong to a webhook whose record is being written right now. */
export const PREDICTION_BODY_GRACE_MS = 3_600_000;

/**
 * Deletes the model webhook bodies (docs/models.md) that no task's prediction record lists and
 * that are older than `graceMs`: bodies the API stored but never recorded (it stopped between the
 * two), and any a forgotten record left behind. A body its task's current prediction lists is kept
 * (a run may still read it); the run's end deletes it with the record. Returns how many went.
 */
export async function sweepPredictionBodies(deps: { store: FileStore; redis: PredictionRedis }, graceMs = PREDICTION_BODY_GRACE_MS, now = Date.now()): Promise<number> {
  let deleted = 0;
  for await (const page of deps.store.list(PREDICTION_BODIES_PREFIX)) {
    const old = page.filter((o) => now - o.lastModified.getTime() >= graceMs);
    const byTask = new Map<string, string[]>();
    for (const o of old) {
      const publicId = o.key.slice(PREDICTION_BODIES_PREFIX.length).split('/')[0];
      if (publicId) byTask.set(publicId, [...(byTask.get(publicId) ?? []), o.key]);
    }
    const unlisted: string[] = [];
    for (const [publicId, keys] of byTask) {
      const listed = new Set((await readPrediction(deps.redis, publicId)).refs);
      unlisted.push(...keys.filter((key) => !listed.has(key)));
    }
    if (unlisted.length > 0) await deps.store.deleteMany(unlisted);
    deleted += unlisted.length;
  }
  return deleted;
}
