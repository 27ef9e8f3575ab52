// Retention (RETENTION_DAYS, docs/operations.md): the worker's retention job deletes the stored inputs and
// outputs of terminal tasks that finished more than RETENTION_DAYS ago, once across replicas, and
// the API then answers 410 on their file routes. Real PostgreSQL, Redis and file store (fs; one
// case on S3: OpenStack Swift's s3api, whose batch delete the job uses).
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { TaskStatus } from '@taskapi/domain';
import { TaskRows, type FinishTaskInput } from '@taskapi/task-lifecycle';
import { inputKey, outputKey } from '@taskapi/file-store';
import { createS3Store } from '@taskapi/file-store/src/s3-store';
import { newId } from '@taskapi/ids';
import { createLogger } from '@taskapi/logger';
import { startSwift, waitFor } from '@taskapi/testing';
import { createKey, seedAccount, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from '../../services/api/test/support/harness';
import { expireTaskFiles } from '../../services/worker/src/domain/expire-task-files';
import { createWorkerMetrics } from '../../services/worker/src/infra/metrics';
import { startRetentionJob } from '../../services/worker/src/infra/retention-job';

const image = fs.readFileSync(path.join(__dirname, '../fixtures/astronaut.png'));
const EXPIRED = { message: 'The files of this task have expired.' };

describe('retention (RETENTION_DAYS): stored files of old terminal tasks are deleted, the rows stay', () => {
  let api: TestApi;
  let account: TestAccount;
  let key: CreatedKey;

  beforeAll(async () => {
    api = await startApi();
    account = await seedAccount(api, { credits: 1000, label: 'retention' });
    key = await createKey(api, account, { type: 'paid' });
  });
  afterAll(async () => {
    await api.close();
  });

  const png = Buffer.from('\x89PNG\r\n\x1a\nretention test bytes');
  const create = async (kind: string, body: Record<string, unknown>): Promise<string> => {
    const res = await api.req('POST', `/api/tasks/${kind}`, { headers: withKey(key), body });
    expect(res.status).toBe(201);
    return res.body.public_id as string;
  };
  /** A terminal task finished `daysAgo` days ago; when completed, with an output file in the store. */
  async function finished(daysAgo: number, outcome: FinishTaskInput['status'] = TaskStatus.completed): Promise<string> {
    const publicId = await create('image-generation', { prompt: 'kept for a while' });
    if (outcome === TaskStatus.completed) await api.deps.store.put(outputKey(publicId, 'image.png'), png, 'image/png');
    const input: FinishTaskInput =
      outcome === TaskStatus.completed
        ? { status: outcome, result: {}, files: [{ name: 'image.png', content_type: 'image/png', size: png.length }] }
        : outcome === TaskStatus.failed
          ? { status: outcome, errorCode: 'internal_error' }
          : { status: outcome };
    await new TaskRows(api.deps.db.pool).finish(publicId, null, input, newId('delivery'));
    await setFinishedAt(publicId, daysAgo);
    return publicId;
  }
  /** A face-detection task (its upload in the store) with finished_at `daysAgo` days ago; failed, or still queued. */
  async function withUpload(daysAgo: number, terminal = true): Promise<string> {
    const publicId = await create('face-detection', { image_base64: image.toString('base64') });
    expect(await api.deps.store.head(inputKey(publicId))).not.toBeNull();
    if (terminal) await new TaskRows(api.deps.db.pool).finish(publicId, null, { status: TaskStatus.failed, errorCode: 'internal_error' }, newId('delivery'));
    // On a queued task an old finished_at is nonsense, but it must be left alone all the same.
    await setFinishedAt(publicId, daysAgo);
    return publicId;
  }
  const setFinishedAt = (publicId: string, daysAgo: number) =>
    api.deps.db.pool.query(`UPDATE tasks SET finished_at = now() - make_interval(days => $2::int) WHERE public_id = $1`, [publicId, daysAgo]);
  const row = async (publicId: string) =>
    (
      await api.deps.db.pool.query<{ status: number; files: unknown[]; files_expired_at: Date | null; has_input: boolean }>(
        `SELECT status, files, files_expired_at, EXISTS (SELECT 1 FROM task_inputs i WHERE i.task_id = t.id) AS has_input FROM tasks t WHERE public_id = $1`,
        [publicId],
      )
    ).rows[0]!;
  const stored = async (objectKey: string) => (await api.deps.store.head(objectKey)) !== null;
  const counter = async (registry: ReturnType<typeof createWorkerMetrics>['registry'], name: string) => (await registry.getSingleMetric(name)?.get())?.values[0]?.value ?? 0;

  it('two worker replicas run the job at once: one wins the lock; old terminal tasks lose their files, others keep them', async () => {
    const old = [await finished(31), await finished(45, TaskStatus.cancelled)];
    const oldUpload = await withUpload(31);
    const recent = await finished(29);
    const pendingUpload = await withUpload(31, false);
    // The signed link handed out before expiry, and the API-key route with the row in the API's cache.
    const before = await api.req('GET', `/api/tasks/${old[0]}`, { headers: withKey(key) });
    const signedUrl = before.body.files[0].url as string;
    expect((await fetch(signedUrl)).status).toBe(200);

    const replicas = [0, 1].map(() => {
      const lines: string[] = [];
      const stream = new Writable({ write: (chunk: Buffer, _enc, done) => (lines.push(chunk.toString()), done()) });
      const metrics = createWorkerMetrics();
      const logger = createLogger({ service: 'worker', level: 'info', stream });
      const job = startRetentionJob({ db: api.deps.db, redis: api.deps.redis, store: api.deps.store, logger, metrics }, 30, 60_000);
      return { lines, metrics, job };
    });
    try {
      await waitFor(async () => (await row(oldUpload)).files_expired_at !== null && (await row(old[1]!)).files_expired_at !== null, { what: 'the retention job' });
      await waitFor(async () => replicas.some((r) => r.lines.some((l) => l.includes('retention: deleted'))), { what: 'the batch log line' });
    } finally {
      await Promise.all(replicas.map((r) => r.job.stop()));
    }

    for (const publicId of [...old, oldUpload]) {
      const r = await row(publicId);
      expect({ publicId, files: r.files, expired: r.files_expired_at instanceof Date, input: r.has_input }).toEqual({ publicId, files: [], expired: true, input: false });
    }
    expect(await stored(outputKey(old[0]!, 'image.png'))).toBe(false);
    expect(await stored(inputKey(oldUpload))).toBe(false);
    // Untouched: finished 29 days ago; not terminal (whatever finished_at says).
    expect(await row(recent)).toMatchObject({ files: [{ name: 'image.png' }], files_expired_at: null });
    expect(await stored(outputKey(recent, 'image.png'))).toBe(true);
    expect(await row(pendingUpload)).toMatchObject({ status: TaskStatus.queued, files_expired_at: null, has_input: true });
    expect(await stored(inputKey(pendingUpload))).toBe(true);

    // One replica ran it (the other found the lock taken), and counted what it deleted once.
    const counts = await Promise.all(
      replicas.map(async (r) => ({
        tasks: await counter(r.metrics.registry, 'taskapi_retention_expired_tasks_total'),
        files: await counter(r.metrics.registry, 'taskapi_retention_deleted_files_total'),
        logged: r.lines.filter((l) => l.includes('retention: deleted')).length,
      })),
    );
    expect(counts.filter((c) => c.logged > 0)).toHaveLength(1);
    // Through the sweepers' lock (taskapi:sweeper:*), held for most of the interval.
    expect(await api.deps.redis.pttl('taskapi:sweeper:retention')).toBeGreaterThan(0);
    expect(counts.reduce((n, c) => n + c.tasks, 0)).toBe(3);
    // The completed task's output and the upload; the cancelled task had no files.
    expect(counts.reduce((n, c) => n + c.files, 0)).toBe(2);
    const line = JSON.parse(replicas.flatMap((r) => r.lines).find((l) => l.includes('retention: deleted'))!);
    expect(line).toMatchObject({ level: 'info', tasks: 3, files: 2, retention_days: 30 });
    expect(await replicas[0]!.metrics.registry.metrics()).toContain('taskapi_retention_deleted_files_total');

    // The task JSON keeps the row; every file route answers 410.
    const task = await api.req('GET', `/api/console/tasks/${old[0]}`, { headers: account.auth });
    expect(task.body).toMatchObject({ status: 20, files: [], files_expired_at: expect.any(String) });
    expect(new Date(task.body.files_expired_at).toISOString()).toBe(task.body.files_expired_at);
    expect(Object.keys(task.body).slice(-7)).toEqual(['files', 'files_expired_at', 'priority', 'ttl_seconds', 'fairness_key', 'progress', 'queue']);
    for (const [what, res] of [
      ['api key (row cached before expiry)', await api.req('GET', `/api/tasks/${old[0]}/files/image.png`, { headers: withKey(key) })],
      ['signed link', await api.req('GET', new URL(signedUrl).pathname + new URL(signedUrl).search)],
      ['console', await api.req('GET', `/api/console/tasks/${old[0]}/files/image.png`, { headers: account.auth })],
      ['api key, upload task', await api.req('GET', `/api/tasks/${oldUpload}/files/image.png`, { headers: withKey(key) })],
    ] as const) {
      expect({ what, status: res.status, body: res.body }).toEqual({ what, status: 410, body: EXPIRED });
    }
    const kept = await api.req('GET', `/api/tasks/${recent}/files/image.png`, { headers: withKey(key) });
    expect(kept.status).toBe(200);
  });

  it('works in batches and is idempotent: a run that crashed after deleting objects is finished by the next', async () => {
    const tasks = [await finished(40), await finished(40), await finished(40)];
    const upload = await withUpload(40);
    // The state a crash between the two steps leaves: objects deleted, rows not yet marked.
    await api.deps.store.deleteMany([outputKey(tasks[0]!, 'image.png'), inputKey(upload)]);

    const batches: Array<{ tasks: number; files: number }> = [];
    const deps = { db: api.deps.db.pool, store: api.deps.store, onBatch: (b: { tasks: number; files: number }) => batches.push(b) };
    expect(await expireTaskFiles(deps, 30, 2)).toEqual({ tasks: 4, files: 4 });
    expect(batches).toEqual([
      { tasks: 2, files: 2 },
      { tasks: 2, files: 2 },
    ]);
    for (const publicId of [...tasks, upload]) expect(await row(publicId)).toMatchObject({ files: [], files_expired_at: expect.any(Date), has_input: false });
    for (const publicId of tasks) expect(await stored(outputKey(publicId, 'image.png'))).toBe(false);

    // Nothing is left to do, and done rows are not touched again.
    const marked = (await row(tasks[1]!)).files_expired_at;
    expect(await expireTaskFiles(deps, 30, 2)).toEqual({ tasks: 0, files: 0 });
    expect((await row(tasks[1]!)).files_expired_at).toEqual(marked);
  });

  it('deletes from an S3 bucket too (STORAGE_DRIVER=s3, OpenStack Swift)', async () => {
    const swift = await startSwift();
    try {
      const bucket = 'taskapi-retention';
      await swift.createBucket(bucket);
      const s3 = createS3Store(swift.storeOptions(bucket));
      const publicId = await finished(31);
      const kept = await finished(29);
      for (const id of [publicId, kept]) await s3.put(outputKey(id, 'image.png'), png, 'image/png');
      await api.deps.db.pool.query(
        `INSERT INTO task_inputs (task_id, content_type, in_store) SELECT id, 'image/png', true FROM tasks WHERE public_id = $1`,
        [publicId],
      );
      await s3.put(inputKey(publicId), image, 'image/png');

      expect(await expireTaskFiles({ db: api.deps.db.pool, store: s3 }, 30)).toEqual({ tasks: 1, files: 2 });
      expect(await s3.head(outputKey(publicId, 'image.png'))).toBeNull();
      expect(await s3.head(inputKey(publicId))).toBeNull();
      expect(await s3.head(outputKey(kept, 'image.png'))).not.toBeNull();
      expect(await row(publicId)).toMatchObject({ files: [], files_expired_at: expect.any(Date), has_input: false });
    } finally {
      await swift.stop();
    }
  }, 60_000);
});
