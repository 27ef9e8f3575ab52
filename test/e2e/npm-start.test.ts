// `npm start`, the one-machine command of the README, started as a user starts it and stopped as a
// user stops it: SIGTERM to the PID npm has (a supervisor), or Ctrl-C (SIGINT to the terminal's
// whole process group). Every service must take its graceful path and no process may be left.
// CI also runs this file on the machine's own Node as the smoke test of `npm start`.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { freePort, startHttpsReceiver, testCa, testEnv, waitFor, type HttpsReceiver } from '@taskapi/testing';
import { createKey, seedAccount, withKey, type CreatedKey, type TestAccount } from '../../services/api/test/support/harness';
import { predictionId } from '@taskapi/domain';
import { startHeldCogServer, type HeldCogServer } from './support/held-model';
import { startChild, startSystem, superviseChild, type ChildService, type TestSystem } from './support/system';
import { deliveriesOf, waitForTask } from './support/tasks';

const REDIS_DB = 7;
const ROOT = path.resolve(__dirname, '../..');
const HANDED_BACK = 'task handed back to the queue (worker shutting down)';

describe('npm start', () => {
  let system: TestSystem;
  let receiver: HttpsReceiver;
  let cog: HeldCogServer;
  let account: TestAccount;
  let key: CreatedKey;
  const started: ChildService[] = [];

  beforeAll(async () => {
    cog = await startHeldCogServer({ concurrency: 4 });
    system = await startSystem(REDIS_DB);
    receiver = await startHttpsReceiver(() => 204);
    account = await seedAccount(system.api, { credits: 1_000 });
    key = await createKey(system.api, account, { type: 'paid' });
  });

  afterAll(async () => {
    await Promise.all(started.map((c) => c.kill('SIGKILL')));
    await receiver?.close();
    await cog?.close();
    await system?.stop();
  });

  /** `npm start` in its own process group (as a terminal runs a foreground job). */
  async function npmStart(): Promise<{ service: ChildService; port: number }> {
    const port = await freePort();
    const env = {
      ...process.env,
      ...testEnv({ ...system.env, LOG_LEVEL: 'info', PORT: String(port), HOST: '127.0.0.1', ENGINE_VIDEO: 'cog', COG_URL_VIDEO: cog.url, COG_MAX_CONCURRENCY_VIDEO: '4' }),
      NODE_EXTRA_CA_CERTS: testCa().caFile,
    };
    const child = spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    const service = await superviseChild('npm start', child, ['api listening', 'worker started', 'webhook dispatcher started']);
    started.push(service);
    return { service, port };
  }

  async function runningVideoTask(port: number): Promise<string> {
    // Through the API that npm start runs.
    const res = await fetch(`http://127.0.0.1:${port}/api/tasks/video-generation`, {
      method: 'POST',
      headers: { ...withKey(key), 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'npm start', duration_seconds: 1, callback_url: receiver.url('/hooks') }),
    });
    expect(res.status).toBe(201);
    const publicId = ((await res.json()) as { public_id: string }).public_id;
    await cog.waitForHeld(predictionId(publicId, 1));
    return publicId;
  }

  async function finishedByAnotherWorker(publicId: string, stopped: ChildService): Promise<void> {
    // The prediction npm start's worker created still runs (a shutdown does not cancel it): the next
    // worker re-attaches to it by its id. Counted before that worker starts: it may take the task
    // before it logs that it started.
    const id = predictionId(publicId, 1);
    const puts = cog.putRequests()[id]!;
    const env = { ...system.env, WORKER_KINDS: 'video-generation', ENGINE_VIDEO: 'cog', COG_URL_VIDEO: cog.url, COG_MAX_CONCURRENCY_VIDEO: '4', COG_WEBHOOK_BASE_URL: system.api.url };
    const worker = await startChild('worker', env, 'worker started');
    started.push(worker);
    try {
      // Its create (answered with the running prediction) and its stream: released only then, or the
      // prediction could end between the two, and the stream's PUT would start it again.
      try {
        await waitFor(() => cog.putRequests()[id]! >= puts + 2, { timeoutMs: 30_000, what: 'the worker to re-attach' });
      } catch (err) {
        // What both workers said of the task and of the scheduler, for whoever reads a failure.
        const said = (logs: Array<Record<string, unknown>>) =>
          logs.filter((l) => l.public_id === publicId || l.level === 'warn' || l.level === 'error').map((l) => JSON.stringify(l));
        const status = (await system.api.deps.db.pool.query('SELECT status, attempts FROM tasks WHERE public_id = $1', [publicId])).rows[0];
        throw new Error(`${(err as Error).message}; task ${JSON.stringify(status)}; npm start said:\n${said(stopped.logs).join('\n')}\nthe new worker said:\n${said(worker.logs).join('\n')}`, { cause: err });
      }
      cog.held.release(id);
      expect(await waitForTask(system.api, key.plaintext, publicId)).toMatchObject({ status: 20 });
      const { rows } = await system.api.deps.db.pool.query('SELECT attempts FROM tasks WHERE public_id = $1', [publicId]);
      expect(rows[0]).toEqual({ attempts: 1 });
      expect(cog.predictions().filter((p) => p.id.startsWith(publicId))).toHaveLength(1);
    } finally {
      // Not left running into the next test, where it would take that test's task.
      await worker.stop();
    }
  }

  async function expectStoppedCleanly(service: ChildService, publicId: string): Promise<void> {
    await waitFor(() => service.child.exitCode !== null, { timeoutMs: 15_000, what: 'npm start to exit' });
    await service.exited; // its output fully read
    expect(service.child.exitCode).toBe(0);
    await waitFor(() => service.leftovers().length === 0, { timeoutMs: 2_000, what: 'no process left' });
    for (const name of ['api', 'worker', 'webhook-dispatcher']) {
      expect(service.logs.filter((l) => l.service === name && l.message === 'stopped')).toHaveLength(1);
    }
    expect(service.logs.filter((l) => l.message === HANDED_BACK).map((l) => l.public_id)).toEqual([publicId]);
  }

  it('runs a task to its webhook, and SIGTERM to its PID stops every service gracefully', async () => {
    const { service, port } = await npmStart();
    const done = await fetch(`http://127.0.0.1:${port}/api/tasks/image-generation`, {
      method: 'POST',
      headers: { ...withKey(key), 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'smoke', callback_url: receiver.url('/hooks') }),
    });
    const imageId = ((await done.json()) as { public_id: string }).public_id;
    await waitFor(() => receiver.received.some((r) => JSON.parse(r.body.toString()).public_id === imageId), { timeoutMs: 20_000, what: 'the webhook' });
    await waitFor(async () => (await deliveriesOf(system.api, imageId))[0]?.state === 'succeeded', { what: 'the delivery to be recorded' });

    const publicId = await runningVideoTask(port);
    service.child.kill('SIGTERM');
    await expectStoppedCleanly(service, publicId);
    await finishedByAnotherWorker(publicId, service);
  }, 60_000);

  it('Ctrl-C (SIGINT to the process group) stops every service gracefully', async () => {
    const { service, port } = await npmStart();
    const publicId = await runningVideoTask(port);
    process.kill(-service.child.pid!, 'SIGINT');
    await expectStoppedCleanly(service, publicId);
    await finishedByAnotherWorker(publicId, service);
  }, 60_000);
});
