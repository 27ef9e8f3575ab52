// Repair, against the real stores: the creation's scheduler step failing (the task restored from
// PostgreSQL), a released job lost, a place left counted for an ended task, and a task whose job
// gave up, each of its writes failing in turn.
import { TaskStatus } from '@taskapi/domain';
import { taskJobId } from '@taskapi/queue';
import type { StoreName } from '../src';
import { crashAt, faultAt, Harness, KIND } from './support/harness';

let h: Harness;
beforeAll(async () => {
  h = await Harness.start('lifecycle_repair');
});
afterAll(async () => {
  await h.close();
});
beforeEach(async () => {
  await h.reset();
});

it('enqueue: a task whose submission never reached the scheduler is restored in its line and runs', async () => {
  const publicId = await h.create();
  // As if the API stopped between the commit and the submit (or Redis lost everything since).
  await h.redis.flushdb();
  const { lifecycle } = h.lifecycle({ current: faultAt('scheduler') });
  await expect(lifecycle.enqueue.submit(KIND, [{ publicId, accountId: h.account.id, order: '1', createdAt: new Date() }])).rejects.toThrow('injected fault: scheduler');
  expect((await h.state(publicId)).scheduled).toBeUndefined();
  await h.repair();
  expect((await h.state(publicId)).scheduled).toBe('pending');
  const settled = await h.settle(publicId);
  expect(settled).toMatchObject({ status: TaskStatus.completed, charges: 1, refunds: 0 });
});

it('a task that started once and is queued again past its deadline (a hand-back, a retry) is restored without it, and runs', async () => {
  const publicId = await h.create({ extra: { ttl_seconds: 60 } });
  // As a hand-back leaves it (queued, started_at kept), after its deadline; then Redis lost everything.
  await h.api.deps.db.pool.query("UPDATE tasks SET started_at = now() - interval '2 minutes', expires_at = now() - interval '1 minute' WHERE public_id = $1", [publicId]);
  await h.redis.flushdb();
  await h.repair();
  expect((await h.state(publicId)).scheduled).toBe('pending');
  // Neither the scheduler (no deadline restored) nor the expiry (it has started) drops it.
  const { lifecycle } = h.lifecycle();
  expect(await lifecycle.expiry.expireDue()).toBe(0);
  expect(await h.settle(publicId)).toMatchObject({ status: TaskStatus.completed, charges: 1, refunds: 0 });
});

it('a released task whose job Redis lost gets the same job again; a place counted for an ended task is freed', async () => {
  const publicId = await h.create();
  const { lifecycle } = h.lifecycle();
  const { runs } = h.worker(lifecycle);
  await runs.heartbeat();
  expect((await h.state(publicId)).scheduled).toBe('ready');
  await h.api.deps.taskQueues.queues[KIND].remove(taskJobId(publicId, 1));
  expect((await lifecycle.repair.sweep(KIND, 0)).requeued).toBe(1);
  expect(await h.api.deps.taskQueues.queues[KIND].getJob(taskJobId(publicId, 1))).toBeDefined();
  // Ended without the scheduler hearing of it (the API's cancel could not reach it, its job gone).
  await h.api.deps.taskQueues.queues[KIND].remove(taskJobId(publicId, 1));
  await h.lifecycle({ current: new Set(['scheduler', 'predictions']) }).lifecycle.cancels.cancel(h.account.id, publicId);
  expect(await h.running()).toBe(1);
  expect((await lifecycle.repair.sweep(KIND, 0)).released).toBe(1);
  expect(await h.running()).toBe(0);
  expect((await h.state(publicId)).scheduled).toBeUndefined();
});

describe('give up: a task whose job ended for good before the task did', () => {
  it('fails with internal_error and its sentence, refunded, its webhook job added, its place freed, its prediction noted', async () => {
    const publicId = await h.create();
    await h.leavePrediction(publicId);
    const { lifecycle } = h.lifecycle();
    const finished = await lifecycle.repair.giveUp(KIND, publicId);
    expect(finished).toMatchObject({ status: TaskStatus.failed, refunded: 2 });
    const state = await h.state(publicId);
    expect(state).toMatchObject({ status: 30, errorCode: 'internal_error', charges: 1, refunds: 1, marker: '30', orphanNoted: true });
    expect(state.deliveries).toHaveLength(1);
    expect(state.deliveryJobs).toEqual([true]);
    expect(state.scheduled).toBeUndefined();
    // A second give-up (the sweeper finding the same failed job) changes nothing.
    expect(await lifecycle.repair.giveUp(KIND, publicId)).toBeNull();
    expect((await h.state(publicId)).refunds).toBe(1);
  });

  for (const store of ['markers', 'scheduler', 'webhooks', 'predictions'] as StoreName[]) {
    for (const crash of [false, true]) {
      it(`${crash ? `a crash before the ${store} write` : `the ${store} write failing`}: the sweepers end it as failed, with its webhook`, async () => {
        const publicId = await h.create();
        const { lifecycle } = h.lifecycle({ current: crash ? crashAt(store) : faultAt(store) });
        expect(await lifecycle.repair.giveUp(KIND, publicId)).not.toBeNull();
        const state = await h.settle(publicId);
        expect(state).toMatchObject({ status: 30, errorCode: 'internal_error', charges: 1, refunds: 1 });
        expect(state.deliveryJobs).toEqual([true]);
        expect((await h.read(publicId)).status).toBe(30);
      });
    }
  }
});

it('a reader seeds a marker Redis lost, never over a writer\'s newer one', async () => {
  const publicId = await h.create();
  const { lifecycle } = h.lifecycle();
  await h.redis.flushdb();
  await lifecycle.repair.seedMarker(h.account.id, publicId, 0);
  expect((await h.state(publicId)).marker).toBe('0');
  await lifecycle.repair.seedMarker(h.account.id, publicId, 10);
  expect((await h.state(publicId)).marker).toBe('0');
  // Terminal statuses are never seeded: only the transition that made them writes them.
  await h.redis.flushdb();
  await lifecycle.repair.seedMarker(h.account.id, publicId, 40);
  expect((await h.state(publicId)).marker).toBeNull();
});
