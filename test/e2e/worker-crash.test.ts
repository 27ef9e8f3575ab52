// Workers are real processes here (`npm run start:worker`, as users start them), killed with
// SIGKILL mid-task (the whole process tree, as when a machine or container dies). The video kind
// runs on a Cog model server that holds each prediction until the test releases it, so the kill
// lands while the task is running; the prediction outlives the worker, and the next run of the
// task re-attaches to it.
import fs from 'node:fs';
import path from 'node:path';
import { startHttpsReceiver, waitFor, type HttpsReceiver } from '@taskapi/testing';
import { createKey, seedAccount, withKey, type CreatedKey, type TestAccount } from '../../services/api/test/support/harness';
import { predictionId } from '@taskapi/domain';
import { startHeldCogServer, type HeldCogServer } from './support/held-model';
import { startChild, startDispatcher, startSystem, type ChildService, type Running, type TestSystem } from './support/system';
import { deliveriesOf, ledgerOf, waitForTask } from './support/tasks';

const REDIS_DB = 12;

describe('a worker killed mid-task', () => {
  let system: TestSystem;
  let dispatcher: Running;
  let receiver: HttpsReceiver;
  let cog: HeldCogServer;
  let account: TestAccount;
  let key: CreatedKey;
  let workerEnv: Record<string, string>;
  const children: ChildService[] = [];

  beforeAll(async () => {
    cog = await startHeldCogServer({ concurrency: 4 });
    // waitForTask polls every 50 ms: a slow run must not reach the paid key's per-minute limit.
    system = await startSystem(REDIS_DB, { WORKER_LOCK_DURATION_MS: '1000', RATE_LIMIT_PAID_PER_MINUTE: '100000' });
    workerEnv = {
      ...system.env,
      WORKER_KINDS: 'video-generation',
      ENGINE_VIDEO: 'cog',
      COG_URL_VIDEO: cog.url,
      COG_MAX_CONCURRENCY_VIDEO: '4',
      COG_WEBHOOK_BASE_URL: system.api.url,
      // Children log at info level, so the test can wait for "worker started".
      LOG_LEVEL: 'info',
    };
    receiver = await startHttpsReceiver(() => 204);
    dispatcher = await startDispatcher(system.env);
    account = await seedAccount(system.api, { credits: 100 });
    key = await createKey(system.api, account, { type: 'paid' });
  });

  afterAll(async () => {
    await Promise.all(children.map((c) => c.kill('SIGKILL')));
    await dispatcher?.stop();
    await receiver?.close();
    await cog?.close();
    await system?.stop();
  });

  async function worker(): Promise<ChildService> {
    const child = await startChild('worker', workerEnv, 'worker started');
    children.push(child);
    return child;
  }

  async function videoTask(): Promise<string> {
    const res = await system.api.req('POST', '/api/tasks/video-generation', {
      headers: withKey(key),
      body: { prompt: 'crash test', duration_seconds: 1, callback_url: receiver.url('/hooks') },
    });
    expect(res.status).toBe(201);
    return res.body.public_id;
  }

  const hooksOf = (publicId: string) => receiver.at('/hooks').filter((r) => JSON.parse(r.body.toString()).public_id === publicId);

  async function attemptsColumn(publicId: string): Promise<number> {
    const { rows } = await system.api.deps.db.pool.query<{ attempts: number }>('SELECT attempts FROM tasks WHERE public_id = $1', [publicId]);
    return rows[0]!.attempts;
  }

  const predictionsOf = (publicId: string) => cog.predictions().filter((p) => p.id.startsWith(`${publicId}-`));

  it('is retried by another worker, which re-attaches to the running prediction; the task completes exactly once', async () => {
    const first = await worker();
    const publicId = await videoTask();
    const id = predictionId(publicId, 1);
    await cog.waitForHeld(id);
    expect((await waitForTask(system.api, key.plaintext, publicId, [10])).status).toBe(10);
    await first.kill('SIGKILL');
    const puts = cog.putRequests()[id]!;

    const second = await worker();
    // The dead worker's lock expires; the stalled job goes back to the queue and runs again: the
    // re-run continues the attempt (a crash spends none) and follows its prediction, still
    // running, instead of a new one.
    // Its create (answered with the running prediction) and its stream: released only then, or the
    // prediction could end between the two, and the stream's PUT would start it again.
    await waitFor(() => cog.putRequests()[id]! >= puts + 2, { what: 'the second run to re-attach' });
    cog.held.release(id);
    const task = await waitForTask(system.api, key.plaintext, publicId);
    expect(task).toMatchObject({ status: 20, error_code: null, files: [expect.objectContaining({ name: 'video.gif' })] });
    expect(predictionsOf(publicId)).toEqual([expect.objectContaining({ id, status: 'succeeded', cancelRequested: false })]);
    await waitFor(() => hooksOf(publicId).length === 1, { what: 'the webhook' });
    await waitFor(async () => (await deliveriesOf(system.api, publicId))[0]?.state === 'succeeded', { what: 'delivery to succeed' });
    expect(await ledgerOf(system.api, publicId)).toEqual([{ entry_type: 'charge', amount: -10 }]);
    expect(await deliveriesOf(system.api, publicId)).toHaveLength(1);
    expect(hooksOf(publicId)).toHaveLength(1);
    expect(await attemptsColumn(publicId)).toBe(1);
    // The recovery path says what it recovered.
    expect(second.logs).toContainEqual(expect.objectContaining({ level: 'warn', job_id: publicId, message: expect.stringMatching(/^stalled job recovered/) }));
    await second.stop();
    expect(second.child.exitCode).toBe(0);
  });

  it('killed again on the retry: the task fails with internal_error and is refunded, once; its prediction is cancelled', async () => {
    const first = await worker();
    const publicId = await videoTask();
    const id = predictionId(publicId, 1);
    await cog.waitForHeld(id);
    await first.kill('SIGKILL');
    const puts = cog.putRequests()[id]!;
    const second = await worker();
    // Its create (answered with the running prediction) and its stream: released only then, or the
    // prediction could end between the two, and the stream's PUT would start it again.
    await waitFor(() => cog.putRequests()[id]! >= puts + 2, { what: 'the second run to re-attach' });
    await second.kill('SIGKILL');

    // Stalled more often than allowed (maxStalledCount 1): BullMQ fails the job, the worker fails the task.
    const third = await worker();
    const task = await waitForTask(system.api, key.plaintext, publicId);
    expect(task).toMatchObject({ status: 30, error_code: 'internal_error', error_message: 'The task could not be run; it was refunded. Please try again.' });
    expect(await ledgerOf(system.api, publicId)).toEqual([
      { entry_type: 'charge', amount: -10 },
      { entry_type: 'refund', amount: 10 },
    ]);
    const hooks = await waitFor(() => (hooksOf(publicId).length === 1 ? hooksOf(publicId) : undefined), { what: 'the failure webhook' });
    expect(JSON.parse(hooks[0]!.body.toString())).toEqual({ public_id: publicId, status: 30, error_code: 'internal_error', payload: null });
    // Nobody will read it: the worker that gave the job up cancelled it.
    await waitFor(() => predictionsOf(publicId)[0]?.status === 'canceled', { what: 'the prediction to be cancelled' });
    expect(predictionsOf(publicId)).toHaveLength(1);
    await third.stop();
  });

  it('a runaway engine is ended at the kind\'s deadline: status 30 timeout, refunded, not retried', async () => {
    const child = await startChild('worker', { ...workerEnv, TASK_TIMEOUT_VIDEO_MS: '500' }, 'worker started');
    children.push(child);
    const publicId = await videoTask();
    await cog.waitForHeld(predictionId(publicId, 1)); // and never released
    const task = await waitForTask(system.api, key.plaintext, publicId);
    expect(task).toMatchObject({ status: 30, error_code: 'timeout', error_message: 'The task did not finish within 0.5 s.' });
    expect(await ledgerOf(system.api, publicId)).toEqual([
      { entry_type: 'charge', amount: -10 },
      { entry_type: 'refund', amount: 10 },
    ]);
    await waitFor(async () => (await system.api.deps.taskQueues.queues['video-generation'].getJobState(publicId)) === 'completed', {
      what: 'the job to be done (no retry)',
    });
    expect(predictionsOf(publicId)).toEqual([expect.objectContaining({ status: 'canceled', cancelRequested: true })]);
    await child.stop();
  });

  it('cancelled while running: the prediction is cancelled, the task refunded once, no webhook', async () => {
    const child = await worker();
    const publicId = await videoTask();
    await cog.waitForHeld(predictionId(publicId, 1));
    const cancelled = await system.api.req('POST', `/api/tasks/${publicId}/cancel`, { headers: withKey(key) });
    expect(cancelled.body.status).toBe(40);
    await waitFor(() => predictionsOf(publicId)[0]?.status === 'canceled', { what: 'the prediction to be cancelled' });
    await waitFor(async () => (await system.api.deps.taskQueues.queues['video-generation'].getJobState(publicId)) === 'completed', {
      what: 'the worker to finish the job',
    });
    const task = await waitForTask(system.api, key.plaintext, publicId);
    expect(task).toMatchObject({ status: 40, result: null, files: [] });
    expect(await ledgerOf(system.api, publicId)).toEqual([
      { entry_type: 'charge', amount: -10 },
      { entry_type: 'refund', amount: 10 },
    ]);
    expect(await deliveriesOf(system.api, publicId)).toEqual([]);
    expect(fs.existsSync(path.join(system.api.config.filesDir, publicId))).toBe(false);
    expect(hooksOf(publicId)).toHaveLength(0);
    await child.stop();
  });

  it('SIGTERM hands the running task back without using an attempt or cancelling its prediction; the next worker re-attaches and finishes it', async () => {
    const first = await worker();
    const publicId = await videoTask();
    const id = predictionId(publicId, 1);
    await cog.waitForHeld(id);
    await first.stop();
    expect(first.child.exitCode).toBe(0);
    expect(first.logs.some((l) => l.message === 'stopped')).toBe(true);
    expect(cog.held.holds(id)).toBe(true);
    const puts = cog.putRequests()[id]!;

    const second = await worker();
    // Its create (answered with the running prediction) and its stream: released only then, or the
    // prediction could end between the two, and the stream's PUT would start it again.
    await waitFor(() => cog.putRequests()[id]! >= puts + 2, { what: 'the second worker to re-attach' });
    cog.held.release(id);
    expect((await waitForTask(system.api, key.plaintext, publicId)).status).toBe(20);
    expect(await attemptsColumn(publicId)).toBe(1);
    expect(predictionsOf(publicId)).toHaveLength(1);
    expect(await ledgerOf(system.api, publicId)).toEqual([{ entry_type: 'charge', amount: -10 }]);
    await second.stop();
  });
});
