// STORAGE_DRIVER=s3 against a real S3-compatible server (OpenStack Swift + s3api, started here on
// free ports): the worker writes outputs to the bucket and the API serves them; uploaded images go
// to the bucket instead of PostgreSQL; rows from before (bytes in PostgreSQL) still run and are
// moved by the migration step; an unreachable store is a 503 and a retried task, never a lost file;
// a missing bucket fails readiness with a clear message.
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { inputKey, outputKey, type FileStore } from '@taskapi/file-store';
import { createS3Store } from '@taskapi/file-store/src/s3-store';
import { startSwift, startTcpRelay, waitFor, type SwiftServer, type TcpRelay } from '@taskapi/testing';
import { moveInputsToStore } from '../../services/api/src/domain/move-inputs-to-store';
import { createKey, seedAccount, startApi, withKey, type CreatedKey, type TestAccount } from '../../services/api/test/support/harness';
import { startSystem, startWorker, systemEnv, type RunningService, type TestSystem } from './support/system';
import { waitForTask } from './support/tasks';

const fixture = (name: string) => fs.readFileSync(path.join(__dirname, '../fixtures', name));
const REDIS_DB = 3;

describe('object storage (STORAGE_DRIVER=s3 on OpenStack Swift)', () => {
  let swift: SwiftServer;
  /** Between the services and Swift, so a test can make the store unreachable. */
  let relay: TcpRelay;
  let system: TestSystem;
  let worker: RunningService | undefined;
  let account: TestAccount;
  let key: CreatedKey;
  /** The bucket as the operator sees it (directly, not through the relay). */
  let bucketView: FileStore;
  let s3Env: Record<string, string>;
  const bucket = `taskapi-e2e-${randomBytes(4).toString('hex')}`;

  beforeAll(async () => {
    swift = await startSwift();
    await swift.createBucket(bucket);
    bucketView = createS3Store(swift.storeOptions(bucket));
    relay = await startTcpRelay('127.0.0.1', Number(new URL(swift.endpoint).port));
    const env = swift.env(bucket);
    s3Env = { ...env, S3_ENDPOINT: `http://127.0.0.1:${relay.port}` };
    // The SDK reads credentials from the standard variables of the process.
    process.env.AWS_ACCESS_KEY_ID = env.AWS_ACCESS_KEY_ID;
    process.env.AWS_SECRET_ACCESS_KEY = env.AWS_SECRET_ACCESS_KEY;
    system = await startSystem(REDIS_DB, s3Env);
    account = await seedAccount(system.api, { credits: 1000 });
    key = await createKey(system.api, account, { type: 'paid' });
  }, 90_000);

  afterAll(async () => {
    await worker?.stop();
    await system?.stop();
    await relay?.close();
    await swift?.stop();
  });

  async function create(kind: string, body: Record<string, unknown>): Promise<string> {
    const res = await system.api.req('POST', `/api/tasks/${kind}`, { headers: withKey(key), body });
    expect(res.status).toBe(201);
    return res.body.public_id as string;
  }
  const bytesIn = async (store: FileStore, objectKey: string) => {
    const object = await store.get(objectKey);
    return object && Buffer.concat(await object.body.toArray());
  };
  const inputRow = async (publicId: string) =>
    (
      await system.api.deps.db.pool.query<{ in_store: boolean; data: Buffer | null; content_type: string }>(
        'SELECT i.in_store, i.data, i.content_type FROM task_inputs i JOIN tasks t ON t.id = i.task_id WHERE t.public_id = $1',
        [publicId],
      )
    ).rows[0];

  it('rows from before the store (image bytes in PostgreSQL) still run; move-inputs-to-store then copies them to the bucket', async () => {
    // No worker yet: the task stays queued while it is turned into a row of the previous release.
    const image = fixture('astronaut.png');
    const publicId = await create('face-detection', { image_base64: image.toString('base64') });
    await system.api.deps.db.pool.query(
      'UPDATE task_inputs SET in_store = false, data = $2 FROM tasks t WHERE t.id = task_inputs.task_id AND t.public_id = $1',
      [publicId, image],
    );
    await bucketView.deleteMany([inputKey(publicId)]);

    worker = await startWorker(system.env);
    const task = await waitForTask(system.api, key.plaintext, publicId);
    expect({ status: task.status, faces: task.result?.face_coordinates?.length }).toEqual({ status: 20, faces: 1 });
    expect(await bucketView.head(inputKey(publicId))).toBeNull();

    // The migration step, as `npm run admin -- move-inputs-to-store` runs it; a second run finds nothing.
    expect(await moveInputsToStore(system.api.deps.repos.tasks, system.api.deps.store)).toEqual({ moved: 1 });
    expect(await inputRow(publicId)).toEqual({ in_store: true, data: null, content_type: 'image/png' });
    expect((await bytesIn(bucketView, inputKey(publicId)))?.equals(image)).toBe(true);
    expect(await moveInputsToStore(system.api.deps.repos.tasks, system.api.deps.store)).toEqual({ moved: 0 });
  });

  it('an uploaded image goes to the bucket, not PostgreSQL, and the worker reads it from there', async () => {
    const image = fixture('astronaut.png');
    const publicId = await create('face-detection', { image_base64: image.toString('base64') });
    expect(await inputRow(publicId)).toEqual({ in_store: true, data: null, content_type: 'image/png' });
    expect((await bytesIn(bucketView, inputKey(publicId)))?.equals(image)).toBe(true);
    const task = await waitForTask(system.api, key.plaintext, publicId);
    expect(task.status).toBe(20);
    expect(task.result.face_coordinates).toHaveLength(1);
  });

  it('the worker writes outputs to the bucket and the API serves them: whole, byte range, conditional', async () => {
    const publicId = await create('image-generation', { prompt: 'a lighthouse', width: 128, height: 128 });
    const task = await waitForTask(system.api, key.plaintext, publicId);
    expect(task.status).toBe(20);
    expect(task.files).toEqual([{ name: 'image.png', content_type: 'image/png', size: expect.any(Number), url: expect.any(String) }]);
    const stored = await bytesIn(bucketView, outputKey(publicId, 'image.png'));
    expect(stored?.length).toBe(task.files[0].size);
    expect(fs.existsSync(path.join(system.api.config.filesDir, publicId))).toBe(false);

    const url = `${system.api.url}/api/tasks/${publicId}/files/image.png`;
    const whole = await fetch(url, { headers: withKey(key) });
    expect(whole.status).toBe(200);
    expect(whole.headers.get('content-type')).toBe('image/png');
    expect(whole.headers.get('content-length')).toBe(String(stored?.length));
    expect(whole.headers.get('accept-ranges')).toBe('bytes');
    expect(Buffer.from(await whole.arrayBuffer()).equals(stored as Buffer)).toBe(true);

    const part = await fetch(url, { headers: { ...withKey(key), range: 'bytes=8-23' } });
    expect(part.status).toBe(206);
    expect(part.headers.get('content-range')).toBe(`bytes 8-23/${stored?.length}`);
    expect(Buffer.from(await part.arrayBuffer()).equals((stored as Buffer).subarray(8, 24))).toBe(true);

    const beyond = await fetch(url, { headers: { ...withKey(key), range: `bytes=${stored?.length}-` } });
    expect(beyond.status).toBe(416);
    expect(beyond.headers.get('content-range')).toBe(`bytes */${stored?.length}`);
    expect(await beyond.json()).toEqual({ message: 'Malformed request.' });

    const again = await fetch(url, { headers: { ...withKey(key), 'if-none-match': whole.headers.get('etag') as string } });
    expect(again.status).toBe(304);
    await again.arrayBuffer();
  });

  it('files[].url is a presigned GET of the bucket: no API key, browser headers, ranges; altered or expired → 403', async () => {
    const publicId = await create('image-generation', { prompt: 'a harbour', width: 96, height: 96 });
    const task = await waitForTask(system.api, key.plaintext, publicId);
    const stored = (await bytesIn(bucketView, outputKey(publicId, 'image.png'))) as Buffer;
    const url = new URL(task.files[0].url);
    expect(`${url.origin}${url.pathname}`).toBe(`${s3Env.S3_ENDPOINT}/${bucket}/${publicId}/image.png`);
    expect(url.searchParams.get('X-Amz-Expires')).toBe('3600');

    const res = await fetch(url);
    expect({
      status: res.status,
      type: res.headers.get('content-type'),
      disposition: res.headers.get('content-disposition'),
      cache: res.headers.get('cache-control'),
    }).toEqual({ status: 200, type: 'image/png', disposition: 'inline; filename="image.png"', cache: 'private, max-age=3600' });
    expect(Buffer.from(await res.arrayBuffer()).equals(stored)).toBe(true);
    const part = await fetch(url, { headers: { range: 'bytes=0-15' } });
    expect({ status: part.status, range: part.headers.get('content-range') }).toEqual({ status: 206, range: `bytes 0-15/${stored.length}` });
    expect(Buffer.from(await part.arrayBuffer()).equals(stored.subarray(0, 16))).toBe(true);

    const altered = new URL(url);
    const signature = altered.searchParams.get('X-Amz-Signature') as string;
    altered.searchParams.set('X-Amz-Signature', `${signature[0] === 'a' ? 'b' : 'a'}${signature.slice(1)}`);
    const moved = new URL(url.href.replace('/image.png?', '/other.png?'));
    for (const refused of [altered, moved]) {
      const denied = await fetch(refused);
      expect({ url: refused.pathname, status: denied.status }).toEqual({ url: refused.pathname, status: 403 });
      await denied.arrayBuffer();
    }
    const shortLived = await system.api.deps.store.signedGetUrl!(outputKey(publicId, 'image.png'), {
      expiresInSeconds: 1,
      contentType: 'image/png',
      contentDisposition: 'inline; filename="image.png"',
      cacheControl: 'private, max-age=1',
    });
    await waitFor(
      async () => {
        const r = await fetch(shortLived);
        await r.arrayBuffer();
        return r.status === 403;
      },
      { timeoutMs: 10_000, what: 'the presigned URL to expire' },
    );
  });

  it('store unreachable: file routes and uploads answer 503 (never 500), the replica stays in service, a task is retried and completes once it is back', async () => {
    const done = await create('image-generation', { prompt: 'before the outage', width: 64, height: 64 });
    expect((await waitForTask(system.api, key.plaintext, done)).status).toBe(20);

    relay.cut('refuse');
    try {
      const file = await system.api.req('GET', `/api/tasks/${done}/files/image.png`, { headers: withKey(key) });
      expect({ status: file.status, body: file.body }).toEqual({ status: 503, body: { message: 'Service temporarily unavailable. Please retry shortly.' } });
      expect(file.headers.get('retry-after')).toBe('1');
      const upload = await system.api.req('POST', '/api/tasks/face-detection', { headers: withKey(key), body: { image_base64: fixture('astronaut.png').toString('base64') } });
      expect({ status: upload.status, body: upload.body }).toEqual({ status: 503, body: { message: 'Service temporarily unavailable. Please retry shortly.' } });
      // The store was seen working at start: an outage of it does not take the replica out of
      // service (everything but files keeps working), and a probe costs no write.
      const ready = await system.api.req('GET', '/readyz');
      expect({ status: ready.status, body: ready.body }).toEqual({ status: 200, body: { status: 'ready', checks: { database: 'ok', redis: 'ok', storage: 'ok' } } });

      // The engine runs, storing its output fails: the attempt is retried, the task is not failed.
      const publicId = await create('image-generation', { prompt: 'during the outage', width: 64, height: 64 });
      const queue = system.api.deps.taskQueues.queues['image-generation'];
      await waitFor(async () => ((await queue.getJob(publicId))?.attemptsMade ?? 0) >= 1, { timeoutMs: 20_000, what: 'a failed attempt' });
      const during = await system.api.req('GET', `/api/tasks/${publicId}`, { headers: withKey(key) });
      expect([0, 10]).toContain(during.body.status);
      relay.restore();
      const task = await waitForTask(system.api, key.plaintext, publicId);
      expect({ status: task.status, error_code: task.error_code, files: task.files.length }).toEqual({ status: 20, error_code: null, files: 1 });
      expect(await bucketView.head(outputKey(publicId, 'image.png'))).not.toBeNull();
    } finally {
      relay.restore();
    }
    expect((await system.api.req('GET', '/readyz')).status).toBe(200);
  });

  it('a missing bucket: the API starts, says so clearly in its log, and /readyz fails', async () => {
    const log = new PassThrough();
    let text = '';
    log.on('data', (chunk: Buffer) => (text += chunk.toString()));
    const api = await startApi({ ...systemEnv(REDIS_DB, s3Env), S3_BUCKET: 'no-such-bucket-anywhere', LOG_LEVEL: 'info' }, { logStream: log });
    try {
      const ready = await api.req('GET', '/readyz');
      expect({ status: ready.status, body: ready.body }).toEqual({ status: 503, body: { status: 'not_ready', checks: { database: 'ok', redis: 'ok', storage: 'unavailable' } } });
      expect(text).toContain('file store is not usable; readiness fails until it is');
      expect(text).toContain('bucket \\"no-such-bucket-anywhere\\" does not exist (the operator creates it before starting the services)');
      expect(text).not.toContain(swift.credentials.secretAccessKey);
    } finally {
      await api.close();
    }
  });
});
