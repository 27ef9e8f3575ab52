// Each service started the way users start it (`npm run start:*`, or the built `node dist/*.js`
// entry the image runs), signalled at the PID that was started, as a supervisor or container
// runtime signals it. Afterwards no process of it may be left, and no work may be lost or repeated.
import http from 'node:http';
import { freePort, startHttpsReceiver, waitFor, type HttpsReceiver } from '@taskapi/testing';
import { createKey, seedAccount, withKey, type CreatedKey, type TestAccount } from '../../services/api/test/support/harness';
import { predictionId } from '@taskapi/domain';
import { startHeldCogServer, type HeldCogServer } from './support/held-model';
import { startChild, startSystem, startWorker, type ChildService, type Running, type TestSystem } from './support/system';
import { deliveriesOf, ledgerOf, waitForTask } from './support/tasks';
import { commandLine, descendants, isAlive } from '@taskapi/testing';

const REDIS_DB = 8;

describe('graceful shutdown of the processes users start', () => {
  let system: TestSystem;
  let receiver: HttpsReceiver;
  let cog: HeldCogServer;
  let account: TestAccount;
  let key: CreatedKey;
  const started: ChildService[] = [];
  const inProcess: Running[] = [];

  beforeAll(async () => {
    cog = await startHeldCogServer({ concurrency: 4 });
    system = await startSystem(REDIS_DB);
    receiver = await startHttpsReceiver((req) => (req.path.startsWith('/slow') ? new Promise((r) => setTimeout(() => r(204), 1_500)) : 204));
    account = await seedAccount(system.api, { credits: 1_000 });
    key = await createKey(system.api, account, { type: 'paid' });
  });

  afterAll(async () => {
    await Promise.all(started.map((c) => c.kill('SIGKILL')));
    await Promise.all(inProcess.map((s) => s.stop()));
    await receiver?.close();
    await cog?.close();
    await system?.stop();
  });

  const cogVideoWorker = () => ({ WORKER_KINDS: 'video-generation', ENGINE_VIDEO: 'cog', COG_URL_VIDEO: cog.url, COG_MAX_CONCURRENCY_VIDEO: '4', COG_WEBHOOK_BASE_URL: system.api.url });

  async function start(...args: Parameters<typeof startChild>): Promise<ChildService> {
    const child = await startChild(...args);
    started.push(child);
    return child;
  }

  async function createTask(kind: string, body: Record<string, unknown>): Promise<string> {
    const res = await system.api.req('POST', `/api/tasks/${kind}`, { headers: withKey(key), body });
    expect(res.status).toBe(201);
    return res.body.public_id as string;
  }

  async function taskRow(publicId: string): Promise<{ status: number; attempts: number }> {
    const { rows } = await system.api.deps.db.pool.query<{ status: number; attempts: number }>(
      'SELECT status, attempts FROM tasks WHERE public_id = $1',
      [publicId],
    );
    return rows[0]!;
  }

  /** Signals the started PID and waits (with a deadline) for it to exit; returns its exit code. */
  async function signalAndWait(service: ChildService, signal: NodeJS.Signals, timeoutMs = 10_000): Promise<number | null> {
    // Every process of the service right now (the engine's children included), to check after.
    const before = [...service.pids, ...descendants(service.child.pid!)];
    service.child.kill(signal);
    await waitFor(() => service.child.exitCode !== null || service.child.signalCode !== null, { timeoutMs, what: 'the process to exit' });
    await service.exited; // its output fully read
    await waitFor(() => before.every((pid) => !isAlive(pid)), { timeoutMs: 2_000, what: 'every process of the service to be gone' });
    return service.child.exitCode;
  }

  const hooksOf = (publicId: string) => receiver.received.filter((r) => JSON.parse(r.body.toString()).public_id === publicId);

  it('worker (npm run start:worker), SIGTERM mid-task: hands the task back at once, exits 0, leaves nothing; the next worker re-attaches to the same prediction on the same attempt', async () => {
    const dispatcher = await startChild('webhook-dispatcher', system.env, 'webhook dispatcher started', 'node');
    started.push(dispatcher);
    const env = { ...system.env, ...cogVideoWorker() };
    const first = await start('worker', env, 'worker started', 'npm');
    expect(first.pids.map(commandLine).some((c) => c.includes('dist/worker.js'))).toBe(true);

    const publicId = await createTask('video-generation', { prompt: 'shutdown', duration_seconds: 1, callback_url: receiver.url('/hooks') });
    const id = predictionId(publicId, 1);
    await cog.waitForHeld(id); // the model is mid-run
    expect(await taskRow(publicId)).toEqual({ status: 10, attempts: 1 });

    expect(await signalAndWait(first, 'SIGTERM')).toBe(0);
    const handedBack = first.logs.filter((l) => l.message === 'task handed back to the queue (worker shutting down)');
    expect(handedBack).toEqual([expect.objectContaining({ public_id: publicId, task_requeued: true })]);
    expect(first.logs.filter((l) => l.message === 'task started')).toEqual([
      { service: 'worker', level: 'info', message: 'task started', public_id: publicId, job_id: publicId, kind: 'video-generation', attempt: 1, timestamp: expect.any(String) },
    ]);
    expect(await taskRow(publicId)).toEqual({ status: 0, attempts: 0 });
    // Not cancelled: the GPU's work is not thrown away.
    expect(cog.held.holds(id)).toBe(true);
    const puts = cog.putRequests()[id]!;

    // The image's entry point this time. The job waits in the queue: picked up within seconds.
    const second = await start('worker', env, 'worker started', 'node');
    // Its create (answered with the running prediction) and its stream: released only then, or the
    // prediction could end between the two, and the stream's PUT would start it again.
    await waitFor(() => cog.putRequests()[id]! >= puts + 2, { what: 'the second worker to re-attach' });
    cog.held.release(id);
    expect(await waitForTask(system.api, key.plaintext, publicId)).toMatchObject({ status: 20 });
    expect(await taskRow(publicId)).toEqual({ status: 20, attempts: 1 });
    // Its log lines reach the pipe a moment after the commit the API read.
    await waitFor(() => second.logs.some((l) => l.public_id === publicId && l.message === 'task completed'), { what: "the second worker's completion line" });
    expect(second.logs.filter((l) => l.public_id === publicId).map((l) => l.message)).toEqual(['task started', 'task completed']);
    expect(await ledgerOf(system.api, publicId)).toEqual([{ entry_type: 'charge', amount: -10 }]);
    await receiver.waitForCount('/hooks', 1);
    await waitFor(async () => (await deliveriesOf(system.api, publicId))[0]?.state === 'succeeded', { what: 'the delivery' });
    expect(hooksOf(publicId)).toHaveLength(1);
    expect(cog.predictions().filter((p) => p.id.startsWith(publicId))).toHaveLength(1);
    expect(await signalAndWait(second, 'SIGTERM')).toBe(0);
    expect(await signalAndWait(dispatcher, 'SIGTERM')).toBe(0);
  });

  it('worker (node dist/worker.js), SIGINT while ffmpeg encodes: ffmpeg is killed, the task goes back, exit 0', async () => {
    const env = { ...system.env, WORKER_KINDS: 'video-generation', ENGINE_VIDEO: 'builtin', VIDEO_FORMAT: 'mp4' };
    const worker = await start('worker', env, 'worker started', 'node');
    const publicId = await createTask('video-generation', { prompt: 'long clip', duration_seconds: 10 });
    const ffmpeg = await waitFor(() => descendants(worker.child.pid!).find((pid) => commandLine(pid).startsWith('ffmpeg')), {
      timeoutMs: 20_000,
      intervalMs: 5,
      what: 'ffmpeg to run',
    });
    expect(await signalAndWait(worker, 'SIGINT')).toBe(0);
    expect(isAlive(ffmpeg)).toBe(false);
    expect(worker.logs.some((l) => l.message === 'task handed back to the queue (worker shutting down)' && l.public_id === publicId)).toBe(true);
    expect(await taskRow(publicId)).toEqual({ status: 0, attempts: 0 });

    // Finished by the next worker, on its first counted attempt.
    inProcess.push(await startWorker(env));
    expect(await waitForTask(system.api, key.plaintext, publicId, [20, 30], 60_000)).toMatchObject({ status: 20 });
    expect(await taskRow(publicId)).toEqual({ status: 20, attempts: 1 });
  });

  it('dispatcher (npm run start:dispatcher), SIGTERM during a delivery: finishes it once, records it, exits 0', async () => {
    const dispatcher = await start('webhook-dispatcher', system.env, 'webhook dispatcher started', 'npm');
    const worker = await startWorker({ ...system.env, WORKER_KINDS: 'image-generation' });
    inProcess.push(worker);
    const publicId = await createTask('image-generation', { prompt: 'slow receiver', callback_url: receiver.url('/slow') });
    await waitFor(() => hooksOf(publicId).length === 1, { timeoutMs: 20_000, what: 'the delivery to reach the receiver' });

    expect(await signalAndWait(dispatcher, 'SIGTERM')).toBe(0);
    expect(await deliveriesOf(system.api, publicId)).toEqual([expect.objectContaining({ state: 'succeeded', attempt_count: 1 })]);
    expect(hooksOf(publicId)).toHaveLength(1);
  });

  it('api (npm run start:api), SIGTERM: /readyz fails at once, requests are served through the drain, in-flight ones finish, exit 0', async () => {
    const port = await freePort();
    const api = await start('api', { ...system.env, PORT: String(port), HOST: '127.0.0.1', SHUTDOWN_DRAIN_MS: '1000' }, 'api listening', 'npm');
    const base = `http://127.0.0.1:${port}`;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);

    // A creation whose body is still arriving when the signal comes, and completes after the drain.
    const body = JSON.stringify({ prompt: 'in flight' });
    const inFlight = new Promise<number>((resolve, reject) => {
      const req = http.request(`${base}/api/tasks/image-generation`, {
        method: 'POST',
        headers: { ...withKey(key), 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      });
      req.on('response', (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      });
      req.on('error', reject);
      req.write(body.slice(0, 5));
      setTimeout(() => req.end(body.slice(5)), 1_600);
    });
    await new Promise((r) => setTimeout(r, 100));

    api.child.kill('SIGTERM');
    const ready = await waitFor(async () => {
      const res = await fetch(`${base}/readyz`);
      return res.status === 503 ? { body: await res.json(), connection: res.headers.get('connection') } : undefined;
    }, { timeoutMs: 2_000, what: '/readyz to fail' });
    expect(ready).toEqual({ body: { status: 'draining' }, connection: 'close' });
    expect((await fetch(`${base}/healthz`)).status).toBe(200);

    expect(await inFlight).toBe(201);
    // Exits as soon as the in-flight request is done (its keep-alive connection is closed then).
    await waitFor(() => api.child.exitCode !== null, { timeoutMs: 5_000, what: 'the api to exit' });
    expect(api.child.exitCode).toBe(0);
    expect(api.leftovers()).toEqual([]);
    await expect(fetch(`${base}/healthz`)).rejects.toThrow();
  });
});
