// Tasks for the usage tests (usage-export.test.ts, console-usage.test.ts): created through the API
// (so charges and refunds land in the ledger as in production), ended the way the worker and the
// cancel endpoint end them, then moved back in time.
import { TaskStatus } from '@taskapi/domain';
import { withKey, type CreatedKey, type TestAccount, type TestApi } from './harness';

export type UsageKind = 'video-generation' | 'image-generation' | 'face-detection';
/** How a seeded task ends: left queued, or ended like the worker or the cancel endpoint ends it. */
export type UsageEnd = 'queued' | 'completed' | 'failed' | 'cancelled';

/** A valid creation body of each kind (the face by URL: never fetched, the task never runs). */
const BODIES: Record<UsageKind, unknown> = {
  'video-generation': { prompt: 'waves', duration_seconds: 2 },
  'image-generation': { prompt: 'a lighthouse', width: 64, height: 64 },
  'face-detection': { image_url: 'https://images.example.test/crowd.jpg' },
};

const DAY_MS = 86_400_000;

/** `YYYY-MM-DD` of the UTC day `daysAgo` days before today. */
export const isoDay = (daysAgo: number) => {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - daysAgo * DAY_MS).toISOString().slice(0, 10);
};

/**
 * Creates a `kind` task with `key` (of `owner`), ends it as `end` says and moves its creation to
 * `createdAt`; resolves with its public id and the cost the API charged.
 */
export async function seedUsageTask(
  api: TestApi,
  owner: TestAccount,
  key: CreatedKey,
  kind: UsageKind,
  end: UsageEnd,
  createdAt: string | Date,
): Promise<{ publicId: string; cost: number }> {
  const res = await api.req('POST', `/api/tasks/${kind}`, { headers: withKey(key), body: BODIES[kind] });
  expect(res.status).toBe(201);
  const publicId = res.body.public_id as string;
  if (end === 'completed' || end === 'failed') {
    const input = end === 'completed' ? { status: TaskStatus.completed, result: { ok: true } } : { status: TaskStatus.failed, errorCode: 'engine_error' as const };
    expect(await api.deps.taskLifecycle.repair.end(publicId, input, owner.id)).not.toBeNull();
  } else if (end === 'cancelled') {
    expect((await api.req('POST', `/api/tasks/${publicId}/cancel`, { headers: withKey(key) })).status).toBe(200);
  }
  await api.deps.db.pool.query('UPDATE tasks SET created_at = $2 WHERE public_id = $1', [publicId, createdAt]);
  return { publicId, cost: res.body.cost as number };
}
