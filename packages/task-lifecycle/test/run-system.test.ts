// A run's transitions, one by one, against the real stores: what each writes, and — with each
// store after the commit failing in turn, and with a crash just before each store — that the
// sweepers and the next run end the task in the state its transition promised: one charge, a
// refund exactly when failed or cancelled, a webhook delivery (with its job) exactly when
// completed or failed with a callback, the scheduler holding nothing, no place left counted.
import { TaskStatus } from '@taskapi/domain';
import { STORE_ORDER, type Run, type RunSystem, type StoreName } from '../src';
import { crashAt, faultAt, Harness, KIND, type FaultSwitch, type Faults, type TaskState } from './support/harness';

let h: Harness;
beforeAll(async () => {
  h = await Harness.start('lifecycle_runs');
});
afterAll(async () => {
  await h.close();
});
beforeEach(async () => {
  await h.reset();
});

const AFTER_COMMIT: StoreName[] = ['markers', 'scheduler', 'webhooks'];

/** A run of a new task by a worker whose stores fail as `faults` says from the moment `fault()` is called. */
async function startRun(opts: { callback?: boolean } = {}) {
  const publicId = await h.create(opts);
  const faults: FaultSwitch = { current: new Set() };
  const { lifecycle, warnings } = h.lifecycle(faults);
  const { runs, slots } = h.worker(lifecycle);
  const job = await h.take(runs, publicId);
  const started = await runs.start({ kind: KIND, publicId, release: job.data.release ?? 1, accountId: job.data.account_id });
  if (!('run' in started)) throw new Error('not started');
  return { publicId, faults, warnings, runs, slots, job, run: started.run as Run, fault: (f: Faults) => (faults.current = f) };
}

/** The run's job ends: completed by its processor, or left to BullMQ's stalled-job recovery after a crash. */
async function endJob(job: Awaited<ReturnType<typeof startRun>>['job'], crashed: boolean) {
  if (crashed) await h.crashJob(job);
  else await h.finishJob(job);
}

function expectSettled(state: TaskState, status: number, opts: { callback?: boolean } = {}) {
  expect(state.status).toBe(status);
  expect(state.charges).toBe(1);
  expect(state.refunds).toBe(status === TaskStatus.failed || status === TaskStatus.cancelled ? 1 : 0);
  const webhook = opts.callback !== false && (status === TaskStatus.completed || status === TaskStatus.failed);
  expect(state.deliveries).toHaveLength(webhook ? 1 : 0);
  expect(state.deliveryJobs.every(Boolean)).toBe(true);
  expect(state.scheduled).toBeUndefined();
}

describe('start', () => {
  it('claims the task (status 10, one attempt), marks it processing and reports the start with the next call', async () => {
    const { publicId, run, runs, slots, job } = await startRun();
    await run.marked;
    const state = await h.state(publicId);
    expect(state).toMatchObject({ status: 10, attempts: 1, marker: '10' });
    // The start rides along with this worker's next call: then the scheduler holds the task active.
    await runs.heartbeat();
    expect((await h.state(publicId)).scheduled).toBe('active');
    await runs.complete(run, { result: {}, files: [] });
    slots.ended(run);
    await h.finishJob(job);
    expectSettled(await h.settle(publicId), TaskStatus.completed);
  });

  it('waits out a PostgreSQL outage at the claim; a worker stopping meanwhile defers the run, keeping its place', async () => {
    const publicId = await h.create();
    const faults: FaultSwitch = { current: new Set(['database']), outage: true };
    const { lifecycle } = h.lifecycle(faults);
    const stop = new AbortController();
    const { runs } = h.worker(lifecycle, stop.signal);
    const job = await h.take(runs, publicId);
    const starting = runs.start({ kind: KIND, publicId, release: job.data.release ?? 1, accountId: job.data.account_id });
    setTimeout(() => (faults.current = new Set()), 300);
    const started = await starting;
    expect('run' in started).toBe(true);
    if ('run' in started) await runs.complete(started.run, { result: {}, files: [] });
    await h.finishJob(job);
    expectSettled(await h.settle(publicId), TaskStatus.completed);

    // Down until the worker stops: deferred, released again (a new job), no attempt spent.
    const second = await h.create();
    faults.current = new Set(['database']);
    const job2 = await h.take(runs, second);
    const deferring = runs.start({ kind: KIND, publicId: second, release: job2.data.release ?? 1, accountId: job2.data.account_id });
    setTimeout(() => stop.abort(), 200);
    expect(await deferring).toEqual({ deferred: true });
    await h.finishJob(job2);
    faults.current = new Set();
    expect((await h.state(second)).attempts).toBe(0);
    const settled = await h.settle(second);
    expectSettled(settled, TaskStatus.completed);
    expect(settled.attempts).toBe(1);
  });
});

describe('complete and fail', () => {
  for (const [transition, status] of [
    ['complete', TaskStatus.completed],
    ['fail', TaskStatus.failed],
  ] as const) {
    const end = (runs: Awaited<ReturnType<typeof startRun>>['runs'], run: Run) =>
      transition === 'complete' ? runs.complete(run, { result: { ok: true }, files: [] }) : runs.fail(run, { errorCode: 'engine_error', errorMessage: 'The model failed.' });

    it(`${transition}: writes PostgreSQL, then the marker, the scheduler and the webhook job`, async () => {
      const { publicId, runs, run, slots, job } = await startRun();
      const ended = await end(runs, run);
      expect('finished' in ended && ended.finished?.status).toBe(status);
      slots.ended(run);
      await h.finishJob(job);
      const state = await h.state(publicId);
      expect(state.marker).toBe(String(status));
      expect(state.scheduled).toBeUndefined();
      expectSettled(state, status);
      expect(await h.running()).toBe(0);
    });

    for (const store of AFTER_COMMIT) {
      for (const crash of [false, true]) {
        it(`${transition}: ${crash ? `a crash before the ${store} write` : `the ${store} write failing`} ends as ${status} after the sweepers`, async () => {
          const { publicId, runs, run, slots, job, fault, warnings } = await startRun();
          fault(crash ? crashAt(store) : faultAt(store));
          const ended = await end(runs, run);
          expect('finished' in ended && ended.finished?.status).toBe(status);
          // The failing write is logged, naming who repairs it; the later ones were still made.
          if (!crash) expect(warnings.filter((w) => w.startsWith(`${transition}: `))).toEqual([expect.stringMatching(new RegExp(`^${transition}: ${store} not written; `))]);
          slots.ended(run);
          fault(new Set());
          await endJob(job, crash);
          // Readers see the committed status whatever the marker says (within the 5 s bound).
          expect((await h.read(publicId)).status).toBe(status);
          expectSettled(await h.settle(publicId), status);
        });
      }
    }

    it(`${transition}: PostgreSQL failing (not an outage) writes nothing; the task runs again and completes`, async () => {
      const { publicId, runs, run, slots, job, fault } = await startRun();
      fault(faultAt('database'));
      await expect(end(runs, run)).rejects.toThrow('injected fault: database');
      slots.ended(run);
      fault(new Set());
      expect((await h.state(publicId)).status).toBe(10);
      // The processor threw: BullMQ runs the job again.
      await h.crashJob(job);
      expectSettled(await h.settle(publicId), TaskStatus.completed);
    });

    it(`${transition}: a PostgreSQL outage at the commit is waited out and the run's own result committed`, async () => {
      const { publicId, runs, run, slots, job, faults } = await startRun();
      faults.outage = true;
      faults.current = new Set(['database', 'markers']);
      setTimeout(() => (faults.current = new Set()), 400);
      const ended = await end(runs, run);
      expect('finished' in ended && ended.finished?.status).toBe(status);
      slots.ended(run);
      await h.finishJob(job);
      const state = await h.settle(publicId);
      expectSettled(state, status);
      expect(state.attempts).toBe(1);
    });
  }

  it('an outage that lasts until the worker stops leaves the run interrupted: released again, it runs once more', async () => {
    const publicId = await h.create();
    const faults: FaultSwitch = { current: new Set(), outage: true };
    const { lifecycle } = h.lifecycle(faults);
    const stop = new AbortController();
    const { runs, slots } = h.worker(lifecycle, stop.signal);
    const job = await h.take(runs, publicId);
    const started = await runs.start({ kind: KIND, publicId, release: job.data.release ?? 1, accountId: job.data.account_id });
    if (!('run' in started)) throw new Error('not started');
    faults.current = new Set(['database']);
    const ending = runs.complete(started.run, { result: {}, files: [] });
    setTimeout(() => stop.abort(), 200);
    expect(await ending).toEqual({ interrupted: true });
    slots.ended(started.run);
    faults.current = new Set();
    await h.finishJob(job);
    expectSettled(await h.settle(publicId), TaskStatus.completed);
  });
});

describe('retry', () => {
  it('spends the attempt: queued again (the marker back to 0) and run again after its delay, ahead of the account\'s other tasks', async () => {
    const { publicId, runs, run, slots, job } = await startRun();
    await run.marked;
    await runs.retry(run, 50);
    slots.ended(run);
    await h.finishJob(job);
    expect(await h.state(publicId)).toMatchObject({ status: 0, attempts: 1, marker: '0', scheduled: 'delayed' });
    const state = await h.settle(publicId);
    expectSettled(state, TaskStatus.completed);
    expect(state.attempts).toBe(2);
  });

  for (const store of ['database', 'markers', 'scheduler'] as const) {
    for (const crash of [false, true]) {
      it(`${crash ? `a crash before the ${store} write` : `the ${store} write failing`}: the task still runs again and completes`, async () => {
        const { publicId, runs, run, slots, job, fault } = await startRun();
        fault(crash ? crashAt(store) : faultAt(store));
        if (store === 'database') await expect(runs.retry(run, 50)).rejects.toThrow('injected fault');
        else await runs.retry(run, 50);
        slots.ended(run);
        fault(new Set());
        await endJob(job, crash || store === 'database');
        const settled = await h.settle(publicId);
        expectSettled(settled, TaskStatus.completed);
        // Unless the database never heard of the retry, its run started the next attempt.
        expect(settled.attempts).toBe(store === 'database' ? 1 : 2);
      });
    }
  }
});

describe('hand back', () => {
  for (const why of ['shutdown', 'busy', 'platform-fault'] as const) {
    it(`${why}: queued again with the attempt given back, the marker back to 0, released again`, async () => {
      const { publicId, runs, run, slots, job } = await startRun();
      await run.marked;
      expect(await runs.handBack(run, why, why === 'busy' ? 50 : 0)).toBe(true);
      slots.ended(run);
      await h.finishJob(job);
      const state = await h.state(publicId);
      expect(state).toMatchObject({ status: 0, attempts: 0, marker: '0' });
      expect(state.scheduled).toBe(why === 'busy' ? 'delayed' : 'ready');
      const settled = await h.settle(publicId);
      expectSettled(settled, TaskStatus.completed);
      expect(settled.attempts).toBe(1);
    });
  }

  for (const store of ['database', 'markers', 'scheduler'] as const) {
    for (const crash of [false, true]) {
      it(`shutdown: ${crash ? `a crash before the ${store} write` : `the ${store} write failing`} still ends the task completed`, async () => {
        const { publicId, runs, run, slots, job, fault } = await startRun();
        fault(crash ? crashAt(store) : faultAt(store));
        // PostgreSQL refusing (not an outage) is the processor's error: BullMQ runs the job again.
        if (store === 'database') await expect(runs.handBack(run, 'shutdown')).rejects.toThrow('injected fault');
        else expect(await runs.handBack(run, 'shutdown')).toBe(true);
        slots.ended(run);
        fault(new Set());
        await endJob(job, crash || store === 'database');
        const settled = await h.settle(publicId);
        expectSettled(settled, TaskStatus.completed);
        // The attempt is given back, or (the database never heard of the hand-back) its next run
        // continues it: either way the task spent one.
        expect(settled.attempts).toBe(1);
      });
    }
  }

  it('platform fault: waits for PostgreSQL to answer before handing back, so no attempt is spent', async () => {
    const { publicId, runs, run, slots, job, faults } = await startRun();
    faults.outage = true;
    faults.current = new Set(['database', 'scheduler']);
    setTimeout(() => (faults.current = new Set()), 300);
    expect(await runs.handBack(run, 'platform-fault')).toBe(true);
    slots.ended(run);
    await h.finishJob(job);
    const settled = await h.settle(publicId);
    expectSettled(settled, TaskStatus.completed);
    expect(settled.attempts).toBe(1);
  });
});

describe('busy: a model server refused the run', () => {
  const busyOf = async (publicId: string) =>
    (
      await h.api.deps.db.pool.query<{ busy_ms: number; waiting: boolean }>(
        'SELECT model_busy_ms::float8 AS busy_ms, model_busy_since IS NOT NULL AS waiting FROM tasks WHERE public_id = $1',
        [publicId],
      )
    ).rows[0]!;

  /** The task's next job, taken and started (after a hand-back). */
  const nextRun = async (runs: RunSystem, publicId: string) => {
    const job = await h.take(runs, publicId);
    const started = await runs.start({ kind: KIND, publicId, release: job.data.release ?? 1, accountId: job.data.account_id });
    if (!('run' in started)) throw new Error('not started');
    return { job, run: started.run as Run };
  };

  /** A run refused busy and handed back (offered again after `delayMs`), then the task's next run. */
  const refusedOnce = async (delayMs: number, opts: { callback?: boolean } = {}) => {
    const { publicId, runs, run, slots, job } = await startRun(opts);
    await run.marked;
    await runs.busy(run, delayMs, 60_000);
    slots.ended(run);
    await h.finishJob(job);
    const { job: again, run: secondRun } = await nextRun(runs, publicId);
    return { publicId, runs, slots, again, second: { run: secondRun } };
  };

  it('within the timeout: handed back (no attempt spent, offered again after its delay); each refusal after the first adds the wait since the one before', async () => {
    const { publicId, runs, run, slots, job } = await startRun();
    await run.marked;
    expect(await runs.busy(run, 50, 60_000)).toEqual({ handedBack: true });
    slots.ended(run);
    await h.finishJob(job);
    expect(await h.state(publicId)).toMatchObject({ status: 0, attempts: 0, marker: '0', scheduled: 'delayed' });
    // The first refusal starts the wait and adds nothing.
    expect(await busyOf(publicId)).toEqual({ busy_ms: 0, waiting: true });
    const { job: again, run: secondRun } = await nextRun(runs, publicId);
    const second = { run: secondRun };
    expect(await runs.busy(second.run, 50, 60_000)).toEqual({ handedBack: true });
    slots.ended(second.run);
    await h.finishJob(again);
    expect((await busyOf(publicId)).busy_ms).toBeGreaterThanOrEqual(40);
    const settled = await h.settle(publicId);
    expectSettled(settled, TaskStatus.completed);
    expect(settled.attempts).toBe(1);
  });

  it('past the timeout: nothing is handed back; the caller fails it (model_unavailable), refunded, its webhook written', async () => {
    // Offered again 30 ms after the first refusal: the second one finds more than 10 ms waited.
    const { publicId, runs, slots, again, second } = await refusedOnce(30, { callback: true });
    const busy = await runs.busy(second.run, 0, 10);
    expect(busy).toMatchObject({ timedOut: true });
    expect((busy as { busyMs: number }).busyMs).toBeGreaterThanOrEqual(10);
    expect((await h.state(publicId)).status).toBe(TaskStatus.processing);
    await runs.fail(second.run, { errorCode: 'model_unavailable', errorMessage: 'No model server could take the task.' });
    slots.ended(second.run);
    await h.finishJob(again);
    expect(await h.read(publicId)).toMatchObject({ status: TaskStatus.failed, error_code: 'model_unavailable' });
    expectSettled(await h.settle(publicId), TaskStatus.failed);
  });

  for (const crash of [false, true]) {
    it(`${crash ? 'a crash before the busy time is written' : 'the busy time failing to be written'}: nothing is handed back, and the task still runs and completes`, async () => {
      const { publicId, runs, run, slots, job, fault } = await startRun();
      fault(crash ? crashAt('database') : faultAt('database'));
      await expect(runs.busy(run, 50, 60_000)).rejects.toThrow('injected fault');
      slots.ended(run);
      fault(new Set());
      await endJob(job, true);
      const settled = await h.settle(publicId);
      expectSettled(settled, TaskStatus.completed);
      expect(settled.attempts).toBe(1);
    });
  }

  it('a retry (the model took the run and failed) ends the present wait; the busy time stays', async () => {
    const { publicId, runs, slots, again, second } = await refusedOnce(0);
    await runs.retry(second.run, 0);
    slots.ended(second.run);
    await h.finishJob(again);
    expect((await busyOf(publicId)).waiting).toBe(false);
    expectSettled(await h.settle(publicId), TaskStatus.completed);
  });
});

describe('cancelled while running, and skip', () => {
  for (const crash of [false, true]) {
    it(`cancelled: the run's end frees its place (${crash ? 'a crash before it' : 'its scheduler write failing'} is repaired)`, async () => {
      const { publicId, runs, run, slots, job, fault } = await startRun();
      const { lifecycle: api } = h.lifecycle();
      expect(await api.cancels.cancel(h.account.id, publicId)).not.toBeNull();
      fault(crash ? crashAt('scheduler') : faultAt('scheduler'));
      await runs.cancelled(run);
      slots.ended(run);
      fault(new Set());
      await endJob(job, crash);
      expectSettled(await h.settle(publicId), TaskStatus.cancelled);
    });
  }

  for (const store of ['scheduler', 'predictions'] as const) {
    for (const crash of [false, true]) {
      it(`skip: a job of a task already ended frees its place and abandons its prediction (${crash ? 'crash before' : 'failing'} ${store})`, async () => {
        const publicId = await h.create();
        const faults: FaultSwitch = { current: new Set() };
        const { lifecycle } = h.lifecycle(faults);
        const { runs } = h.worker(lifecycle);
        const job = await h.take(runs, publicId);
        await h.leavePrediction(publicId);
        // Cancelled while its job is taken but not started: the worker finds it ended.
        const { lifecycle: api } = h.lifecycle({ current: new Set(['predictions']) });
        expect(await api.cancels.cancel(h.account.id, publicId)).not.toBeNull();
        faults.current = crash ? crashAt(store) : faultAt(store);
        expect(await runs.start({ kind: KIND, publicId, release: job.data.release ?? 1, accountId: job.data.account_id })).toEqual({ skipped: true });
        faults.current = new Set();
        await endJob(job, crash);
        const settled = await h.settle(publicId);
        expectSettled(settled, TaskStatus.cancelled);
        // Noted for a worker that reaches the model server; when that write failed, only a re-run of
        // the job (after a crash) notes it, else the record expires on its own.
        expect(settled.orphanNoted).toBe(!(store === 'predictions' && !crash));
      });
    }
  }
});

it('the writes of every transition follow STORE_ORDER', () => {
  expect(STORE_ORDER).toEqual(['database', 'markers', 'scheduler', 'webhooks', 'predictions']);
});
