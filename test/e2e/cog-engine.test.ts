// The `cog` engine against the Cog test server (packages/testing/src/cog-server): every kind on a
// model server, by its event stream or by webhooks back to the API, with progress, outputs and
// failures as docs/models.md says; busy servers, cancels and deadlines; and the API's webhook route.
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import { PassThrough } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { PNG } from 'pngjs';
import { MODEL_WEBHOOK_PATH, predictionId, readPrediction } from '@taskapi/domain';
import { ModelWebhookTokens } from '@taskapi/crypto';
import { CogFile, startCogServer, waitFor, type CogServer } from '@taskapi/testing';
import { heldModel, TINY_GIF } from './support/held-model';
import { createKey, seedAccount, startApi, withKey, type CreatedKey, type TestAccount } from '../../services/api/test/support/harness';
import { startSystem, startWorker, type RunningService, type TestSystem } from './support/system';
import { ledgerOf, waitForTask } from './support/tasks';

const REDIS_DB = 6;
const fixture = (name: string) => fs.readFileSync(path.join(__dirname, '../fixtures', name));

describe('the cog engine', () => {
  let system: TestSystem;
  let account: TestAccount;
  let key: CreatedKey;
  const servers: CogServer[] = [];
  const workers: RunningService[] = [];

  beforeAll(async () => {
    system = await startSystem(REDIS_DB);
    account = await seedAccount(system.api, { credits: 100_000 });
    key = await createKey(system.api, account, { type: 'paid' });
  });

  afterEach(async () => {
    await Promise.all(workers.splice(0).map((w) => w.stop()));
    await Promise.all(servers.splice(0).map((s) => s.close()));
  });

  afterAll(async () => {
    await system?.stop();
  });

  async function cogServer(opts: Parameters<typeof startCogServer>[0]): Promise<CogServer> {
    const server = await startCogServer(opts);
    servers.push(server);
    return server;
  }

  /** A worker of `kind` on the Cog server at `url`; webhooks come back to the test API. */
  async function cogWorker(kind: 'IMAGE' | 'VIDEO' | 'FACE', url: string, env: Record<string, string> = {}, logStream?: NodeJS.WritableStream): Promise<RunningService> {
    const kinds = { IMAGE: 'image-generation', VIDEO: 'video-generation', FACE: 'face-detection' } as const;
    const worker = await startWorker(
      {
        ...system.env,
        WORKER_KINDS: kinds[kind],
        [`ENGINE_${kind}`]: 'cog',
        [`COG_URL_${kind}`]: url,
        COG_WEBHOOK_BASE_URL: system.api.url,
        ...env,
      },
      { logStream },
    );
    workers.push(worker);
    return worker;
  }

  async function create(kind: string, body: Record<string, unknown>): Promise<string> {
    const res = await system.api.req('POST', `/api/tasks/${kind}`, { headers: withKey(key), body });
    expect(res.status).toBe(201);
    return res.body.public_id as string;
  }

  const get = (publicId: string) => system.api.req('GET', `/api/tasks/${publicId}`, { headers: withKey(key) });

  async function fileOf(task: { files: Array<{ url: string }> }): Promise<Buffer> {
    const res = await fetch(task.files[0]!.url, { headers: { 'x-api-key': key.plaintext } });
    expect(res.status).toBe(200);
    return Buffer.from(await res.arrayBuffer());
  }

  it('image on a model that does not stream: 406, then webhooks; one prediction, named after the task and attempt', async () => {
    const cog = await cogServer({ model: 'image' });
    await cogWorker('IMAGE', cog.url);
    const publicId = await create('image-generation', { prompt: 'a red fox', width: 96, height: 64 });
    const task = await waitForTask(system.api, key.plaintext, publicId);
    expect(task).toMatchObject({ status: 20, error_code: null, progress: 1 });
    const png = PNG.sync.read(await fileOf(task));
    expect([png.width, png.height]).toEqual([96, 64]);
    const predictions = cog.predictions();
    expect(predictions.map((p) => p.id)).toEqual([predictionId(publicId, 1)]);
    expect(predictions[0]!.input).toEqual({ prompt: 'a red fox', width: 96, height: 64 });
    // Its record is forgotten once the task ended.
    expect((await readPrediction(system.api.deps.redis as never, publicId)).current).toBeNull();
  });

  it('video on a streaming model: progress while it runs, then 1; the prediction is created asynchronously and streamed, once', async () => {
    const held = heldModel({ streaming: true });
    const cog = await cogServer({ model: held.model });
    await cogWorker('VIDEO', cog.url);
    const publicId = await create('video-generation', { prompt: 'a slow pan', duration_seconds: 2 });
    const id = predictionId(publicId, 1);
    await waitFor(() => held.holds(id), { what: 'the prediction to run' });
    const running = await waitFor(async () => ((await get(publicId)).body.progress === 0.25 ? (await get(publicId)).body : undefined), { what: 'progress 0.25' });
    expect(running.status).toBe(10);
    held.release(id);
    const task = await waitForTask(system.api, key.plaintext, publicId);
    expect(task).toMatchObject({ status: 20, progress: 1, files: [expect.objectContaining({ name: 'video.gif' })] });
    expect(await fileOf(task)).toEqual(TINY_GIF);
    expect(cog.predictions().map((p) => [p.id, p.cancelRequested])).toEqual([[id, false]]);
    // One PUT created it (respond-async), the next attached the stream to it.
    expect(cog.putRequests()[id]).toBe(2);
  });

  it('video through the real video model behind Cog: an mp4, with the progress its logs report', async () => {
    const cog = await cogServer({ model: 'video' });
    await cogWorker('VIDEO', cog.url);
    const publicId = await create('video-generation', { prompt: 'waves', duration_seconds: 1 });
    const task = await waitForTask(system.api, key.plaintext, publicId, [20, 30, 40], 60_000);
    expect(task).toMatchObject({ status: 20, progress: 1, files: [expect.objectContaining({ name: expect.stringMatching(/^video\.(mp4|gif)$/) })] });
    expect((await fileOf(task)).length).toBeGreaterThan(100);
  });

  it('face detection on a model server: the image goes as a data: URL, the boxes come back as face_coordinates', async () => {
    const cog = await cogServer({ model: 'face' });
    await cogWorker('FACE', cog.url);
    const publicId = await create('face-detection', { image_base64: fixture('astronaut.png').toString('base64') });
    const task = await waitForTask(system.api, key.plaintext, publicId);
    expect(task.status).toBe(20);
    expect(task.result.face_coordinates.length).toBeGreaterThan(0);
    for (const box of task.result.face_coordinates) expect(box).toEqual({ x: expect.any(Number), y: expect.any(Number), width: expect.any(Number), height: expect.any(Number), score: expect.any(Number) });
    expect(cog.predictions()[0]!.input.image).toMatch(/^data:image\/png;base64,/);
  });

  it('COG_INPUT_MAP renames fields; an output the kind cannot keep fails the task with engine_error, refunded, not retried', async () => {
    const cog = await cogServer({ model: 'slow' });
    await cogWorker('VIDEO', cog.url, { COG_INPUT_MAP_VIDEO: 'duration_seconds=steps' });
    const publicId = await create('video-generation', { prompt: 'three steps', duration_seconds: 3 });
    const task = await waitForTask(system.api, key.plaintext, publicId);
    expect(task).toMatchObject({
      status: 30,
      error_code: 'engine_error',
      error_message: 'The model returned an output that could not be used: expected a file (a data: or http(s) URL) or a list of them.',
    });
    expect(cog.predictions().map((p) => p.input)).toEqual([{ steps: 3 }]);
    expect(await ledgerOf(system.api, publicId)).toEqual([
      { entry_type: 'charge', amount: -task.cost },
      { entry_type: 'refund', amount: task.cost },
    ]);
  });

  it("a failing model: its error is the task's message, refunded, not retried", async () => {
    const cog = await cogServer({ model: 'fail', failMessage: 'CUDA out of memory.' });
    await cogWorker('IMAGE', cog.url);
    const publicId = await create('image-generation', { prompt: 'too big' });
    const task = await waitForTask(system.api, key.plaintext, publicId);
    expect(task).toMatchObject({ status: 30, error_code: 'engine_error', error_message: 'CUDA out of memory.' });
    expect(cog.predictions()).toHaveLength(1);
    expect(await ledgerOf(system.api, publicId)).toHaveLength(2);
  });

  it("input the model refuses (422) fails with invalid_input, naming the model's field", async () => {
    // Wants `image`, which an image task does not send; with no schema served, the worker's own
    // check (below) cannot see it coming, so the model's 422 decides.
    const cog = await cogServer({ model: 'face', openapi: null });
    await cogWorker('IMAGE', cog.url);
    const publicId = await create('image-generation', { prompt: 'no image here' });
    const task = await waitForTask(system.api, key.plaintext, publicId);
    expect(task).toMatchObject({ status: 30, error_code: 'invalid_input', error_message: expect.stringMatching(/^Image: /) });
    expect(cog.predictions()).toHaveLength(0);
  });

  it('a busy server (409): the task waits queued with no attempt spent, the worker learns the capacity, and it runs once a slot frees', async () => {
    const held = heldModel({ streaming: false });
    const cog = await cogServer({ model: held.model, concurrency: 1 });
    // Told the model runs two at once (as when other workers share it): the refusal teaches one.
    await cogWorker('IMAGE', cog.url, { WORKER_CONCURRENCY: '2', COG_MAX_CONCURRENCY_IMAGE: '2', COG_BUSY_RETRY_MS: '200' });
    const first = await create('image-generation', { prompt: 'first' });
    await waitFor(() => held.holds(predictionId(first, 1)), { what: 'the first prediction to run' });
    const second = await create('image-generation', { prompt: 'second' });
    const secondId = predictionId(second, 1);
    await waitFor(() => cog.putRequests()[secondId] === 1, { what: 'the refused PUT' });
    const row = async (publicId: string) =>
      (await system.api.deps.db.pool.query<{ status: number; attempts: number }>('SELECT status, attempts FROM tasks WHERE public_id = $1', [publicId])).rows[0];
    await waitFor(async () => (await row(second))?.status === 0, { what: 'the second task back in the queue' });
    expect(await row(second)).toEqual({ status: 0, attempts: 0 });
    // Readers see it queued again too (the status marker was moved back, and announced).
    await waitFor(async () => (await get(second)).body.status === 0, { what: 'GET to show the task queued' });
    held.release(predictionId(first, 1));
    await waitFor(() => held.holds(secondId), { what: 'the second prediction to run' });
    // Capacity learned: one refusal, then the task was only offered again once the slot was free.
    expect(cog.putRequests()[secondId]).toBe(2);
    held.release(secondId);
    expect(await waitForTask(system.api, key.plaintext, second)).toMatchObject({ status: 20 });
    expect(await row(second)).toEqual({ status: 20, attempts: 1 });
  });

  it("COG_MAX_CONCURRENCY_<KIND>: as many predictions at once as the model runs, none refused; by default one", async () => {
    const busyRuns = async (worker: RunningService) =>
      Number(/taskapi_worker_task_runs_total\{kind="image-generation",outcome="busy"\} (\d+)/.exec(await (await fetch(`${worker.opsUrl}/metrics`)).text())?.[1] ?? 0);
    const running = (held: ReturnType<typeof heldModel>, ids: string[]) => ids.filter((id) => held.holds(predictionId(id, 1)));
    for (const [max, modelSlots] of [['3', 3], [undefined, 2]] as const) {
      const held = heldModel({ streaming: false });
      const cog = await cogServer({ model: held.model, concurrency: modelSlots });
      const worker = await cogWorker('IMAGE', cog.url, { WORKER_CONCURRENCY: '4', OPS_PORT: '0', HOST: '127.0.0.1', ...(max ? { COG_MAX_CONCURRENCY_IMAGE: max } : {}) });
      const ids: string[] = [];
      for (let i = 0; i < 4; i++) ids.push(await create('image-generation', { prompt: `slot ${i}` }));
      const expected = max ? 3 : 1;
      await waitFor(() => running(held, ids).length === expected, { what: `${expected} predictions running` });
      // The others were never sent: no 409 to learn from, no busy hand-back.
      const waiting = ids.filter((id) => !held.holds(predictionId(id, 1)));
      for (const id of waiting) expect(cog.putRequests()[predictionId(id, 1)]).toBeUndefined();
      expect(await busyRuns(worker)).toBe(0);
      // Each released slot takes the next; all complete.
      await waitFor(
        async () => {
          for (const id of running(held, ids)) held.release(predictionId(id, 1));
          const done = await Promise.all(ids.map(async (id) => (await get(id)).body.status === 20));
          return done.every(Boolean);
        },
        { timeoutMs: 20_000, what: 'every task completed' },
      );
      expect(cog.predictions()).toHaveLength(4);
      expect(await busyRuns(worker)).toBe(0);
      await worker.stop();
      workers.splice(workers.indexOf(worker), 1);
    }
  });

  it("a BUSY health check keeps new predictions away: the task waits queued, asking the health check, not PUT, until a slot frees", async () => {
    const cog = await cogServer({ model: 'image' });
    const worker = await cogWorker('IMAGE', cog.url, { COG_BUSY_RETRY_MS: '100', OPS_PORT: '0', HOST: '127.0.0.1' });
    cog.setHealth('BUSY');
    const publicId = await create('image-generation', { prompt: 'later' });
    const id = predictionId(publicId, 1);
    const busyRuns = async () => Number(/taskapi_worker_task_runs_total\{kind="image-generation",outcome="busy"\} (\d+)/.exec(await (await fetch(`${worker.opsUrl}/metrics`)).text())?.[1] ?? 0);
    await waitFor(async () => (await busyRuns()) >= 3, { what: 'three busy refusals' });
    // At most one PUT (answered 409; none when the worker's readiness probe saw BUSY first): since
    // then the health check said BUSY each time, and no PUT was sent.
    const refused = cog.putRequests()[id] ?? 0;
    expect(refused).toBeLessThanOrEqual(1);
    const row = (await system.api.deps.db.pool.query('SELECT status, attempts FROM tasks WHERE public_id = $1', [publicId])).rows[0];
    expect(row).toEqual({ status: 0, attempts: 0 });
    cog.setHealth(null);
    expect(await waitForTask(system.api, key.plaintext, publicId)).toMatchObject({ status: 20 });
    // Then the create, and the stream asked for (406: this model does not stream).
    expect(cog.putRequests()[id]).toBe(refused + 2);
  });

  describe('a model server that stays busy or unavailable (MODEL_BUSY_TIMEOUT_MS)', () => {
    const busyRow = async (publicId: string) =>
      (
        await system.api.deps.db.pool.query<{ status: number; attempts: number; busy_ms: number; waiting: boolean }>(
          'SELECT status, attempts, model_busy_ms::float8 AS busy_ms, model_busy_since IS NOT NULL AS waiting FROM tasks WHERE public_id = $1',
          [publicId],
        )
      ).rows[0]!;
    /** The task's row between two offers (each offer claims it for a moment: status 10, one attempt). */
    const queuedRow = (publicId: string, what: string, more: (r: Awaited<ReturnType<typeof busyRow>>) => boolean = () => true) =>
      waitFor(
        async () => {
          const r = await busyRow(publicId);
          return r.status === 0 && more(r) ? r : undefined;
        },
        { what },
      );
    const failedMetric = async (opsUrl: string) =>
      Number(/taskapi_worker_tasks_failed_total\{kind="image-generation",error_code="model_unavailable"\} (\d+)/.exec(await (await fetch(`${opsUrl}/metrics`)).text())?.[1]);
    const env = { COG_BUSY_RETRY_MS: '100', MODEL_BUSY_TIMEOUT_MS: '2500', OPS_PORT: '0', HOST: '127.0.0.1' };

    it('a server that never becomes ready: the task waits with no attempt spent, its busy time kept across a worker restart, then fails with model_unavailable, refunded, its webhook written', async () => {
      const cog = await cogServer({ model: 'image', setupMs: 600_000 });
      const first = await cogWorker('IMAGE', cog.url, env);
      const publicId = await create('image-generation', { prompt: 'never', callback_url: 'https://hooks.example.com/taskapi' });
      // Refused (503, STARTING) and offered again: the wait is counted in PostgreSQL.
      expect(await queuedRow(publicId, 'busy time counted', (r) => r.busy_ms > 0)).toMatchObject({ status: 0, attempts: 0, waiting: true });
      await first.stop();
      const before = (await busyRow(publicId)).busy_ms;
      const second = await cogWorker('IMAGE', cog.url, env);
      const task = await waitForTask(system.api, key.plaintext, publicId, [20, 30, 40], 20_000);
      expect(task).toMatchObject({ status: 30, error_code: 'model_unavailable' });
      expect(task.error_message).toMatch(/^No model server could take the task: they stayed busy or unavailable for \d+ s in all\. It was not run and was refunded; please try again later\.$/);
      const row = await busyRow(publicId);
      expect(row.busy_ms).toBeGreaterThanOrEqual(2500);
      expect(row.busy_ms).toBeGreaterThan(before);
      // Nothing ran on the model; charged once, refunded once; the webhook is on its way.
      expect(cog.predictions()).toHaveLength(0);
      expect((await ledgerOf(system.api, publicId)).map((l) => l.entry_type).sort()).toEqual(['charge', 'refund']);
      const deliveries = await system.api.deps.db.pool.query('SELECT task_status FROM webhook_deliveries d JOIN tasks t ON t.id = d.task_id WHERE t.public_id = $1', [publicId]);
      expect(deliveries.rows).toEqual([{ task_status: 30 }]);
      expect(await failedMetric(second.opsUrl!)).toBe(1);
    });

    it("a failed setup, a defunct or an unhealthy server: not ready with the model's reason; tasks wait as busy and run once it is READY again", async () => {
      const broken = heldModel({ streaming: false });
      const cog = await cogServer({
        model: {
          ...broken.model,
          async setup() {
            throw new Error('CUDA error: out of memory');
          },
        },
      });
      const worker = await cogWorker('IMAGE', cog.url, { ...env, MODEL_BUSY_TIMEOUT_MS: '600000' });
      const readiness = async () => {
        const res = await fetch(`${worker.opsUrl}/readyz`);
        return { status: res.status, body: (await res.json()) as { problems?: Record<string, string> } };
      };
      const origin = new URL(cog.url).origin;
      await waitFor(async () => (await readiness()).body.problems?.['model_image-generation'] === `model server ${origin} is SETUP_FAILED: setup() failed: CUDA error: out of memory`, {
        what: "/readyz to quote the model's setup failure",
      });
      expect((await readiness()).status).toBe(503);
      const publicId = await create('image-generation', { prompt: 'after the fix' });
      expect(await queuedRow(publicId, 'the task waiting as busy', (r) => r.busy_ms > 0)).toMatchObject({ status: 0, attempts: 0 });
      for (const [status, said] of [
        ['DEFUNCT', 'DEFUNCT'],
        ['UNHEALTHY', 'UNHEALTHY: Healthcheck failed: user-defined healthcheck returned False'],
      ] as const) {
        cog.setHealth(status);
        await waitFor(async () => (await readiness()).body.problems?.['model_image-generation'] === `model server ${origin} is ${said}`, { what: `/readyz to say ${status}` });
      }
      // The container restarted: READY again, and the waiting task runs, its attempt its first.
      cog.setHealth('READY');
      const id = predictionId(publicId, 1);
      await waitFor(() => broken.holds(id), { what: 'the prediction to run' });
      broken.release(id);
      expect(await waitForTask(system.api, key.plaintext, publicId)).toMatchObject({ status: 20 });
      // No attempt was spent while it waited; its busy time stays on the row.
      expect(await busyRow(publicId)).toMatchObject({ status: 20, attempts: 1 });
      expect((await busyRow(publicId)).busy_ms).toBeGreaterThan(0);
      await waitFor(async () => (await readiness()).status === 200, { what: 'the worker ready again' });
    });
  });

  describe("the model's inputs, checked before its first prediction", () => {
    // tencentarc/gfpgan's Input (docs/models.md): `img` required, where the face kind sends `image`.
    const GFPGAN_DOCUMENT = JSON.stringify({
      openapi: '3.0.2',
      info: { title: 'Cog', version: '0.1.0' },
      components: {
        schemas: {
          Input: {
            title: 'Input',
            type: 'object',
            properties: {
              img: { title: 'Img', type: 'string', format: 'uri', description: 'Input', 'x-order': 0 },
              version: { allOf: [{ $ref: '#/components/schemas/version' }], default: 'v1.4', 'x-order': 1 },
              scale: { title: 'Scale', type: 'number', default: 2, 'x-order': 2 },
            },
            required: ['img'],
          },
          version: { title: 'version', enum: ['v1.2', 'v1.3', 'v1.4', 'RestoreFormer'], type: 'string' },
        },
      },
    });
    const env = { COG_BUSY_RETRY_MS: '100', OPS_PORT: '0', HOST: '127.0.0.1' };
    const readiness = async (worker: RunningService) => {
      const res = await fetch(`${worker.opsUrl}/readyz`);
      return { status: res.status, problem: ((await res.json()) as { problems?: Record<string, string> }).problems?.['model_face-detection'] };
    };

    it('a required model input nothing fills: the kind is not ready naming the field and the model, nothing is sent, the task stays queued (not busy time), through a health blip; the restarted model is checked again and runs it', async () => {
      let log = '';
      const logStream = new PassThrough();
      logStream.on('data', (c: Buffer) => (log += c.toString()));
      const cog = await cogServer({ model: 'face', openapi: GFPGAN_DOCUMENT });
      const worker = await cogWorker('FACE', cog.url, { ...env, LOG_LEVEL: 'info' }, logStream);
      const origin = new URL(cog.url).origin;
      const said = `model server ${origin} does not take what the worker sends: its required input "img" gets nothing (the worker sends "image"; rename one with COG_INPUT_MAP_FACE=ours=img)`;
      await waitFor(async () => (await readiness(worker)).problem === said, { what: '/readyz to name the field and the model' });
      expect((await readiness(worker)).status).toBe(503);
      const publicId = await create('face-detection', { image_base64: fixture('astronaut.png').toString('base64') });
      const refusals = () => log.split('model server cannot take what the kind sends; task queued again').length - 1;
      await waitFor(() => refusals() >= 2, { what: 'the task refused twice and queued again' });
      expect(cog.putRequests()).toEqual({});
      // Queued between offers, no attempt spent; and waiting on a mismatch is not busy time: the
      // task does not run out of MODEL_BUSY_TIMEOUT_MS.
      const between = await waitFor(
        async () => {
          const r = (await system.api.deps.db.pool.query<{ n: string; attempts: number; status: number }>('SELECT model_busy_ms::text AS n, attempts, status FROM tasks WHERE public_id = $1', [publicId])).rows[0]!;
          return r.status === 0 ? r : undefined;
        },
        { what: 'the task queued between two offers' },
      );
      expect(between).toEqual({ n: '0', attempts: 0, status: 0 });
      // A blip (UNHEALTHY still takes predictions, as coglet does) does not forget what was found.
      cog.setHealth('UNHEALTHY');
      await waitFor(async () => (await readiness(worker)).problem?.includes('is UNHEALTHY') === true, { what: '/readyz to say UNHEALTHY' });
      const during = refusals();
      await waitFor(() => refusals() >= during + 2, { what: 'two more refusals during the blip' });
      cog.setHealth(null);
      await waitFor(async () => (await readiness(worker)).problem === said, { what: '/readyz to name the field again' });
      expect(cog.putRequests()).toEqual({});
      // Said once in the log (not at every refusal), with the input the model would drop.
      expect(log.split('model server cannot take what the worker sends').length - 1).toBe(1);
      const dropped = log.split('\n').filter((l) => l.includes('model server does not declare inputs the worker sends; Cog drops them'));
      expect(dropped.map((l) => JSON.parse(l).inputs)).toEqual([['image']]);
      // The container is replaced by one whose model takes `image` (a new setup): checked again, ready, the task runs.
      const port = cog.port;
      await cog.close();
      servers.splice(servers.indexOf(cog), 1);
      await cogServer({ model: 'face', port });
      await waitFor(async () => (await readiness(worker)).status === 200, { what: 'the worker ready with the new model' });
      expect(await waitForTask(system.api, key.plaintext, publicId)).toMatchObject({ status: 20, result: { face_coordinates: expect.any(Array) } });
    });

    it('a schema that is missing, not JSON or huge is logged and the model trusted: the kind is ready and its tasks run', async () => {
      for (const [openapi, why] of [
        [null, 'it answered 404'],
        ['not json {', 'JSON'],
        [JSON.stringify({ padding: 'x'.repeat(2 * 1024 * 1024) }), 'larger than 1048576 bytes'],
      ] as const) {
        let log = '';
        const logStream = new PassThrough();
        logStream.on('data', (c: Buffer) => (log += c.toString()));
        const cog = await cogServer({ model: 'face', openapi });
        const worker = await cogWorker('FACE', cog.url, { ...env, LOG_LEVEL: 'info' }, logStream);
        await waitFor(async () => (await readiness(worker)).status === 200, { what: 'the worker ready' });
        const publicId = await create('face-detection', { image_base64: fixture('astronaut.png').toString('base64') });
        expect(await waitForTask(system.api, key.plaintext, publicId)).toMatchObject({ status: 20 });
        await waitFor(() => log.includes('model server schema not readable; its inputs are not checked') && log.includes(why), { what: `the log to say why (${why})` });
        await worker.stop();
        workers.splice(workers.indexOf(worker), 1);
      }
    });
  });

  it('a model server that answers garbage: the attempt is retried, then the task fails with engine_error, refunded', async () => {
    const cancels: string[] = [];
    const garbage = http.createServer((req, res) => {
      req.resume();
      if (req.method === 'POST' && req.url?.endsWith('/cancel')) cancels.push(req.url);
      if (req.url === '/health-check') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"READY"}');
      if (req.headers.accept === 'text/event-stream') return void res.writeHead(200, { 'content-type': 'text/event-stream' }).end('event: completed\ndata: {not a prediction\n\n');
      res.writeHead(202, { 'content-type': 'application/json' }).end('{"id":');
    });
    await new Promise<void>((resolve) => garbage.listen(0, '127.0.0.1', resolve));
    try {
      await cogWorker('IMAGE', `http://127.0.0.1:${(garbage.address() as AddressInfo).port}`, { TASK_RETRY_BACKOFF_MS: '50' });
      const publicId = await create('image-generation', { prompt: 'garbage in' });
      const task = await waitForTask(system.api, key.plaintext, publicId);
      expect(task).toMatchObject({ status: 30, error_code: 'engine_error', error_message: 'The model server sent an answer that is not a prediction.' });
      const { rows } = await system.api.deps.db.pool.query('SELECT attempts FROM tasks WHERE public_id = $1', [publicId]);
      expect(rows[0]).toEqual({ attempts: 3 });
      expect(await ledgerOf(system.api, publicId)).toHaveLength(2);
      // Each attempt's prediction, which nobody would read, was cancelled.
      expect(cancels).toEqual([1, 2, 3].map((n) => `/predictions/${predictionId(publicId, n)}/cancel`));
    } finally {
      await Promise.all(workers.splice(0).map((w) => w.stop()));
      garbage.closeAllConnections();
      await new Promise((r) => garbage.close(r));
    }
  });

  it('a cancel stops the prediction on the model server at once; the task is refunded and keeps its progress', async () => {
    const held = heldModel({ streaming: true });
    const cog = await cogServer({ model: held.model });
    await cogWorker('VIDEO', cog.url);
    const publicId = await create('video-generation', { prompt: 'never mind', duration_seconds: 2 });
    const id = predictionId(publicId, 1);
    await waitFor(async () => held.holds(id) && (await get(publicId)).body.progress === 0.25, { what: 'the prediction to run and report' });
    const cancelled = await system.api.req('POST', `/api/tasks/${publicId}/cancel`, { headers: withKey(key) });
    expect(cancelled.status).toBe(200);
    await waitFor(() => cog.predictions()[0]?.status === 'canceled', { timeoutMs: 2_000, what: 'the prediction to be cancelled' });
    expect(cog.predictions()[0]!.cancelRequested).toBe(true);
    expect((await get(publicId)).body).toMatchObject({ status: 40, progress: 0.25 });
    expect(await ledgerOf(system.api, publicId)).toHaveLength(2);
  });

  it('a cancel stops the built-in video engine too', async () => {
    const worker = await startWorker({ ...system.env, WORKER_KINDS: 'video-generation', ENGINE_VIDEO: 'builtin', VIDEO_FORMAT: 'gif', WORKER_CONCURRENCY: '1' });
    workers.push(worker);
    const publicId = await create('video-generation', { prompt: 'long', duration_seconds: 10 });
    await waitFor(async () => ((await get(publicId)).body.progress ?? 0) > 0, { what: 'frames to render' });
    expect((await system.api.req('POST', `/api/tasks/${publicId}/cancel`, { headers: withKey(key) })).status).toBe(200);
    // The slot is free again at once: the next task starts and finishes.
    const next = await create('video-generation', { prompt: 'short', duration_seconds: 1 });
    expect(await waitForTask(system.api, key.plaintext, next)).toMatchObject({ status: 20 });
    const task = (await get(publicId)).body;
    expect(task.status).toBe(40);
    expect(task.progress).toBeGreaterThan(0);
    expect(task.progress).toBeLessThan(1);
  });

  it('a deadline fails the task with timeout and cancels the prediction', async () => {
    const cog = await cogServer({ model: 'hang' });
    await cogWorker('IMAGE', cog.url, { TASK_TIMEOUT_IMAGE_MS: '1500' });
    const publicId = await create('image-generation', { prompt: 'forever' });
    const task = await waitForTask(system.api, key.plaintext, publicId);
    expect(task).toMatchObject({ status: 30, error_code: 'timeout' });
    await waitFor(() => cog.predictions()[0]?.cancelRequested === true, { timeoutMs: 2_000, what: 'the prediction to be cancelled' });
  });

  it('a worker shutting down hands the task back without cancelling the prediction; the next one re-attaches to it', async () => {
    const held = heldModel({ streaming: true });
    const cog = await cogServer({ model: held.model });
    const first = await cogWorker('VIDEO', cog.url);
    const publicId = await create('video-generation', { prompt: 'deploy', duration_seconds: 2 });
    const id = predictionId(publicId, 1);
    await waitFor(() => held.holds(id), { what: 'the prediction to run' });
    const stream = await fetch(`${system.api.url}/api/tasks/${publicId}/events`, { headers: withKey(key) });
    await first.stop();
    workers.splice(workers.indexOf(first), 1);
    expect(cog.predictions()).toEqual([expect.objectContaining({ id, status: 'processing', cancelRequested: false })]);
    // The hand-back is visible: GET and an event stream show the task queued again.
    expect((await get(publicId)).body).toMatchObject({ status: 0, progress: null });
    const reader = stream.body!.getReader();
    let seen = '';
    await waitFor(
      async () => {
        seen += new TextDecoder().decode((await reader.read()).value);
        return seen.includes('"status":0,') && seen.lastIndexOf('"status":0,') > seen.indexOf('"status":10,');
      },
      { what: 'the stream to show the hand-back' },
    );
    await reader.cancel();
    await cogWorker('VIDEO', cog.url);
    await waitFor(() => (cog.putRequests()[id] ?? 0) >= 4, { what: 'the second worker to re-attach' });
    held.release(id);
    expect(await waitForTask(system.api, key.plaintext, publicId)).toMatchObject({ status: 20, progress: 1 });
    expect(cog.predictions()).toHaveLength(1);
  });

  it('a task handed back at a shutdown and then cancelled while queued: a worker cancels its prediction on the model server', async () => {
    const held = heldModel({ streaming: true });
    const cog = await cogServer({ model: held.model });
    const first = await cogWorker('VIDEO', cog.url);
    const publicId = await create('video-generation', { prompt: 'deploy, then never mind', duration_seconds: 2 });
    const id = predictionId(publicId, 1);
    await waitFor(() => held.holds(id), { what: 'the prediction to run' });
    await first.stop();
    workers.splice(workers.indexOf(first), 1);
    expect((await system.api.req('POST', `/api/tasks/${publicId}/cancel`, { headers: withKey(key) })).status).toBe(200);
    expect(held.holds(id)).toBe(true);
    await cogWorker('VIDEO', cog.url);
    await waitFor(() => cog.predictions()[0]?.status === 'canceled', { what: 'the prediction to be cancelled' });
    expect(cog.predictions()).toEqual([expect.objectContaining({ id, cancelRequested: true })]);
    expect((await readPrediction(system.api.deps.redis as never, publicId)).current).toBeNull();
  });

  it('a cut stream is attached again to the same prediction, which was not cancelled', async () => {
    const held = heldModel({ streaming: true });
    const cog = await cogServer({ model: held.model });
    await cogWorker('VIDEO', cog.url);
    const publicId = await create('video-generation', { prompt: 'flaky network', duration_seconds: 2 });
    const id = predictionId(publicId, 1);
    await waitFor(() => held.holds(id) && cog.putRequests()[id] === 2, { what: 'the prediction to run, streamed' });
    expect(cog.cutStreams()).toBe(1);
    await waitFor(() => cog.putRequests()[id] === 3, { what: 'the stream to be attached again' });
    expect(held.holds(id)).toBe(true);
    held.release(id);
    expect(await waitForTask(system.api, key.plaintext, publicId)).toMatchObject({ status: 20, progress: 1 });
    expect(cog.predictions()).toEqual([expect.objectContaining({ id, status: 'succeeded', cancelRequested: false })]);
  });

  it('a prediction that ends while no worker follows it is collected from its kept webhook, with no new PUT', async () => {
    const held = heldModel({ streaming: false });
    const cog = await cogServer({ model: held.model });
    const first = await cogWorker('IMAGE', cog.url);
    const publicId = await create('image-generation', { prompt: 'between workers' });
    const id = predictionId(publicId, 1);
    await waitFor(() => held.holds(id), { what: 'the prediction to run' });
    await first.stop();
    workers.splice(workers.indexOf(first), 1);
    held.release(id);
    await waitFor(async () => (await readPrediction(system.api.deps.redis as never, publicId)).status === 'succeeded', { what: 'the final webhook to be kept' });
    const puts = cog.putRequests()[id];
    await cogWorker('IMAGE', cog.url);
    expect(await waitForTask(system.api, key.plaintext, publicId)).toMatchObject({ status: 20, files: [expect.objectContaining({ name: 'image.gif' })] });
    expect(cog.putRequests()[id]).toBe(puts);
  });

  it('a final prediction too large for Redis is stored by the API and read by the worker', async () => {
    const big = randomBytes(1536 * 1024);
    const held = heldModel({ streaming: false, output: () => new CogFile('big.png', 'image/png', big) });
    const cog = await cogServer({ model: held.model });
    await cogWorker('IMAGE', cog.url);
    const publicId = await create('image-generation', { prompt: 'large' });
    const id = predictionId(publicId, 1);
    await waitFor(() => held.holds(id), { what: 'the prediction to run' });
    held.release(id);
    const task = await waitForTask(system.api, key.plaintext, publicId);
    expect(task).toMatchObject({ status: 20, files: [expect.objectContaining({ name: 'image.png' })] });
    expect((await fileOf(task)).equals(big)).toBe(true);
  });

  it("the worker is not ready while its model server is not; /healthz stays up", async () => {
    const cog = await cogServer({ model: 'image', setupMs: 600_000 });
    const worker = await cogWorker('IMAGE', cog.url, { OPS_PORT: '0', HOST: '127.0.0.1' });
    const ready = await fetch(`${worker.opsUrl}/readyz`);
    expect(ready.status).toBe(503);
    expect(JSON.stringify(await ready.json())).toContain('model_image-generation');
    expect((await fetch(`${worker.opsUrl}/healthz`)).status).toBe(200);
    cog.setHealth('READY');
    await waitFor(async () => (await fetch(`${worker.opsUrl}/readyz`)).status === 200, { what: 'the worker to be ready' });
  });

  describe('the API route model servers post to', () => {
    const tokens = () => new ModelWebhookTokens(system.api.deps.config.secretsKey);
    const post = (path: string, body: string | Buffer, type = 'application/json') =>
      fetch(`${system.api.url}${path}`, { method: 'POST', headers: { 'content-type': type }, body });
    const urlOf = (id: string, token = tokens().token(id)) => `${MODEL_WEBHOOK_PATH}/${id}/${token}`;

    it('refuses a wrong token (404, as an unknown path), a body that is not JSON (415 / 400) or not a prediction (400)', async () => {
      const id = predictionId('task_0000000000000000000000', 1);
      const wrong = await post(urlOf(id, 'x'.repeat(43)), '{"status":"processing"}');
      expect(wrong.status).toBe(404);
      expect(await wrong.json()).toEqual({ message: expect.any(String) });
      expect((await post(urlOf('not-a-prediction', 'abc'), '{}')).status).toBe(404);
      const text = await post(urlOf(id), 'hello', 'text/plain');
      expect(text.status).toBe(415);
      expect(await text.json()).toEqual({ message: expect.any(String) });
      expect((await post(urlOf(id), '{"status":')).status).toBe(400);
      const notPrediction = await post(urlOf(id), '{"hello":1}');
      expect(notPrediction.status).toBe(400);
      expect(await notPrediction.json()).toMatchObject({ message: 'Request body must be a prediction object with a status.' });
    });

    it("keeps the URL's token out of the access line", async () => {
      const logs = new PassThrough();
      let log = '';
      logs.on('data', (c: Buffer) => (log += c.toString()));
      const api = await startApi({ ...system.env, LOG_LEVEL: 'info' }, { logStream: logs });
      try {
        const id = predictionId('task_2222222222222222222222', 1);
        const token = new ModelWebhookTokens(api.deps.config.secretsKey).token(id);
        const res = await fetch(`${api.url}${MODEL_WEBHOOK_PATH}/${id}/${token}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"status":"processing"}' });
        expect(res.status).toBe(204);
        await waitFor(() => log.includes(`${MODEL_WEBHOOK_PATH}/${id}/[token]`), { what: 'the access line' });
        expect(log).not.toContain(token);
      } finally {
        await api.close();
      }
    });

    it("answers 204 and keeps nothing for a prediction that is not its task's current one", async () => {
      const publicId = 'task_1111111111111111111111';
      const res = await post(urlOf(predictionId(publicId, 3)), '{"status":"succeeded","output":"x"}');
      expect(res.status).toBe(204);
      expect((await readPrediction(system.api.deps.redis as never, publicId)).current).toBeNull();
    });
  });
});
