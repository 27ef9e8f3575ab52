// Cancel, against the real stores: a queued task and a running one, each store failing in turn and
// a crash before each; the result is always status 40, one refund, no webhook, no place held, and
// a prediction the task left noted for a worker to cancel.
import { TaskStatus } from '@taskapi/domain';
import { waitFor } from '@taskapi/testing';
import { StatusMarkers, TaskRows } from '../src';
import { crashAt, faultAt, Harness, KIND, type FaultSwitch } from './support/harness';

let h: Harness;
beforeAll(async () => {
  h = await Harness.start('lifecycle_cancel');
});
afterAll(async () => {
  await h.close();
});
beforeEach(async () => {
  await h.reset();
});

function expectCancelled(state: Awaited<ReturnType<Harness['state']>>) {
  expect(state).toMatchObject({ status: TaskStatus.cancelled, charges: 1, refunds: 1, deliveries: [] });
  expect(state.scheduled).toBeUndefined();
}

it('a queued task: status 40 and the refund in one statement, the marker, its place in its line, its prediction noted', async () => {
  const publicId = await h.create();
  await h.leavePrediction(publicId);
  const { lifecycle } = h.lifecycle();
  const cancelled = await lifecycle.cancels.cancel(h.account.id, publicId);
  expect(cancelled).toMatchObject({ status: TaskStatus.cancelled, refunded: 2, delivery_id: null });
  const state = await h.state(publicId);
  expectCancelled(state);
  expect(state).toMatchObject({ marker: '40', orphanNoted: true });
  expect(await h.running()).toBe(0);
  // A second cancel changes nothing: the refund happened once.
  expect(await lifecycle.cancels.cancel(h.account.id, publicId)).toBeNull();
  expect((await h.state(publicId)).refunds).toBe(1);
  // Another account's cancel finds nothing.
  expect(await lifecycle.cancels.cancel('acct_someone_else', publicId)).toBeNull();
});

it("a bulk cancel by filter takes the tasks matching when it came: not one that left the filter's status, nor one created after", async () => {
  const [queued, started] = [await h.create(), await h.create()];
  const { lifecycle } = h.lifecycle();
  const rows = new TaskRows(h.api.deps.db.pool);
  // Claimed between the filter's page and its statement: a filter on status 0 leaves it running.
  await h.api.deps.db.pool.query('UPDATE tasks SET status = 10, started_at = now() WHERE public_id = $1', [started]);
  expect(await rows.cancelMany(h.account.id, [queued, started], [null, null], [TaskStatus.queued])).toEqual([expect.objectContaining({ public_id: queued })]);
  // The filter's bound: tasks created after it started are not its.
  const upTo = await rows.newestTaskId();
  const later = await h.create();
  expect((await rows.cancelCandidates(h.account.id, {}, null, 10, upTo)).map((t) => t.public_id)).toEqual([started]);
  expect(await lifecycle.cancels.cancelMatching(h.account.id, { status: TaskStatus.queued })).toBe(1);
  expect((await h.state(later)).status).toBe(TaskStatus.cancelled);
  expect((await h.state(started)).status).toBe(TaskStatus.processing);
});

it('keeps the progress a running task had reached', async () => {
  const publicId = await h.create();
  const { lifecycle } = h.lifecycle();
  const { runs } = h.worker(lifecycle);
  const job = await h.take(runs, publicId);
  const started = await runs.start({ kind: KIND, publicId, release: job.data.release ?? 1, accountId: job.data.account_id });
  if (!('run' in started)) throw new Error('not started');
  started.run.progress.report(0.37);
  // Written a tenth of a second into the run (a shorter run writes none; progress-throttle.test.ts).
  const markers = new StatusMarkers(h.api.deps.redis);
  await waitFor(async () => (await markers.storedProgress(h.account.id, publicId)) === '0.37', { what: 'the progress written' });
  await started.run.progress.stop();
  await lifecycle.cancels.cancel(h.account.id, publicId);
  const row = await h.api.deps.db.pool.query<{ progress: number }>('SELECT progress FROM tasks WHERE public_id = $1', [publicId]);
  expect(row.rows[0]!.progress).toBeCloseTo(0.37);
  await runs.cancelled(started.run);
  await h.finishJob(job);
  expectCancelled(await h.settle(publicId));
});

for (const running of [false, true]) {
  for (const store of ['database', 'markers', 'scheduler', 'predictions'] as const) {
    for (const crash of [false, true]) {
      it(`a ${running ? 'running' : 'queued'} task, ${crash ? `a crash before the ${store} write` : `the ${store} write failing`}`, async () => {
        const publicId = await h.create();
        await h.leavePrediction(publicId);
        const worker = h.lifecycle();
        const { runs, slots } = h.worker(worker.lifecycle);
        const job = running ? await h.take(runs, publicId) : undefined;
        const started = job && (await runs.start({ kind: KIND, publicId, release: job.data.release ?? 1, accountId: job.data.account_id }));
        const faults: FaultSwitch = { current: crash ? crashAt(store) : faultAt(store) };
        const { lifecycle } = h.lifecycle(faults);
        if (store === 'database') {
          // Nothing changed: the client hears 503 and may cancel again; the task carries on meanwhile.
          await expect(lifecycle.cancels.cancel(h.account.id, publicId)).rejects.toThrow('injected fault: database');
          expect((await h.state(publicId)).refunds).toBe(0);
          faults.current = new Set();
          expect(await lifecycle.cancels.cancel(h.account.id, publicId)).not.toBeNull();
        } else {
          expect(await lifecycle.cancels.cancel(h.account.id, publicId)).not.toBeNull();
          faults.current = new Set();
        }
        // The worker running it lets go (it heard the cancel, or its run ends and finds it cancelled).
        if (started && 'run' in started) {
          await runs.cancelled(started.run);
          slots.ended(started.run);
        }
        if (job) await h.finishJob(job);
        const state = await h.settle(publicId);
        expectCancelled(state);
        expect((await h.read(publicId)).status).toBe(TaskStatus.cancelled);
        expect(await h.running()).toBe(0);
        // The prediction is noted, by the cancel or by the skip of a job the scheduler still released
        // (a queued task whose place the crash left); when both miss it, its record expires on its own.
        const skippedLater = !running && crash && (store === 'markers' || store === 'scheduler');
        expect(state.orphanNoted).toBe(skippedLater || (store !== 'predictions' && !(crash && store !== 'database')));
      });
    }
  }
}
