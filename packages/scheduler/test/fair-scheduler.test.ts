// The fair scheduler's rules, on a private redis-server with real BullMQ queues: which task a
// freed worker slot gets, the per-account cap, cancellation, hand-back and retry, cap changes,
// corrupt entries, workers that come and go, the load figures. Workers are played by the test: a
// `Slots` takes the first job of a kind's queue (what a BullMQ worker would take) and reports its
// starts and ends with its idle slots, as the worker service does.
import { Redis } from 'ioredis';
import type { TaskKind } from '@taskapi/task-kinds';
import { Worker, type Job } from 'bullmq';
import { TASK_QUEUES, closeQueues, createTaskQueues, type TaskJob, type TaskQueues } from '@taskapi/queue';
import { startPrivateRedis, waitFor, type PrivateRedis } from '@taskapi/testing';
import { FairScheduler, type NewTask, type TaskRunRef, type WorkerReport } from '../src';

const KIND: TaskKind = 'image-generation';
const OTHER: TaskKind = 'video-generation';

let server: PrivateRedis;
let redis: Redis;
let queues: TaskQueues;
/** Workers that take jobs only when a test's slot asks (no processor, no autorun). */
let consumers: Record<TaskKind, Worker<TaskJob>>;
let consumerRedis: Redis;
const TOKEN = 'test-slot';
let skipped: string[];
let order = 0;

beforeAll(async () => {
  server = await startPrivateRedis();
  redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
  queues = createTaskQueues(redis);
  consumerRedis = redis.duplicate({ maxRetriesPerRequest: null });
  consumers = Object.fromEntries(
    Object.entries(TASK_QUEUES).map(([kind, def]) => [kind, new Worker<TaskJob>(def.name, undefined, { connection: consumerRedis, autorun: false })]),
  ) as Record<TaskKind, Worker<TaskJob>>;
});

afterAll(async () => {
  await Promise.all(Object.values(consumers).map((c) => c.close()));
  consumerRedis.disconnect();
  await closeQueues(Object.values(queues.queues));
  redis.disconnect();
  await server.stop();
});

beforeEach(async () => {
  await redis.flushdb();
  skipped = [];
});

const scheduler = (defaultCap = 10) => new FairScheduler(redis, queues, { defaultCap, onSkipped: (ids) => skipped.push(...ids) });

/** New tasks of one account, in creation order. */
function tasks(account: string, n: number, prefix = account): NewTask[] {
  return Array.from({ length: n }, (_, i) => ({ publicId: `task_${prefix}${i}`, accountId: account, order: String(++order), createdAt: new Date(Date.now() - 1000 + order) }));
}

/**
 * One worker process with `size` slots of each kind, reporting as the worker service does: starts
 * ride along with its next call, and each call says how many slots run no reported start.
 */
class Slots {
  private pending: TaskRunRef[] = [];
  private readonly reported = new Map<string, TaskRunRef>();
  private readonly jobs = new Map<string, Job<TaskJob>>();
  constructor(
    private readonly s: FairScheduler,
    private readonly size: number,
    readonly workerId = 'worker-1',
  ) {}

  private report(ending?: TaskRunRef): WorkerReport {
    const started = this.pending.splice(0);
    for (const run of started) this.reported.set(run.publicId, run);
    const busy = (kind: TaskKind) => [...this.reported.values()].filter((r) => r.kind === kind && r.publicId !== ending?.publicId).length;
    return { workerId: this.workerId, idle: { [KIND]: this.size - busy(KIND), [OTHER]: this.size - busy(OTHER) }, started };
  }

  async join(): Promise<this> {
    await this.s.report(this.report());
    return this;
  }

  /**
   * A free slot takes the next job of the kind's queue as a BullMQ worker does (locked, active);
   * its start is reported with the next call.
   */
  async take(kind: TaskKind = KIND): Promise<TaskRunRef | undefined> {
    if ((await queues.queues[kind].getWaitingCount()) === 0) return undefined;
    const job = (await consumers[kind].getNextJob(TOKEN, { block: false })) as Job<TaskJob> | undefined;
    if (!job) return undefined;
    const run: TaskRunRef = { kind, publicId: job.data.public_id, accountId: job.data.account_id!, order: '0', createdAt: new Date(), release: job.data.release ?? 1 };
    this.jobs.set(run.publicId, job);
    this.pending.push(run);
    return run;
  }

  /** The run's end is reported, then its job ends (as the worker's processor returns). */
  private async end(run: TaskRunRef, call: (report: WorkerReport) => Promise<void>): Promise<void> {
    await call(this.report(run));
    this.reported.delete(run.publicId);
    await this.jobs.get(run.publicId)?.moveToCompleted('ended', TOKEN, false);
    this.jobs.delete(run.publicId);
  }

  finish = (run: TaskRunRef) => this.end(run, (report) => this.s.done(run.publicId, report));
  handBack = (run: TaskRunRef) => this.end(run, (report) => this.s.handBack(run, report));
  retry = (run: TaskRunRef, delayMs: number) => this.end(run, (report) => this.s.retryLater(run, delayMs, report));
}

const waitingIds = async (kind: TaskKind = KIND) => (await queues.queues[kind].getWaiting()).map((j) => j.id);

describe('fair scheduler', () => {
  /** Every scheduler key and its content (the workers' last-seen times left out: they are clock readings). */
  async function schedulerState(): Promise<Record<string, unknown>> {
    const state: Record<string, unknown> = {};
    for (const key of (await redis.keys('taskapi:{sched}:*')).sort()) {
      if (key.endsWith(':workers')) continue;
      const type = await redis.type(key);
      state[key] = type === 'hash' ? await redis.hgetall(key) : type === 'zset' ? await redis.zrange(key, '0', '-1', 'WITHSCORES') : await redis.get(key);
    }
    return state;
  }

  it('a lone task whose turn it is at once is released by its submission, leaving the state a release from its line leaves', async () => {
    const [task] = tasks('acctA', 1);
    // Through its line: submitted while no slot is idle, released when one is.
    let s = scheduler(100);
    await s.submit(KIND, [task!]);
    expect(await waitingIds()).toEqual([]);
    await new Slots(s, 2).join();
    expect(await waitingIds()).toEqual([task!.publicId]);
    const throughLine = await schedulerState();
    // At once: the slot is idle when it is submitted.
    await redis.flushdb();
    s = scheduler(100);
    await new Slots(s, 2).join();
    const placed = await s.submitAndPlace(KIND, [task!]);
    expect(placed).toEqual({ joined: 1, positions: new Map([[task!.publicId, { state: 'ready', ahead: 0, heldByCap: false }]]) });
    expect(await waitingIds()).toEqual([task!.publicId]);
    expect(await schedulerState()).toEqual(throughLine);
  });

  it("a run's end that carries its own start (left out of the call) leaves the state its start reported first leaves", async () => {
    // Caps of 1 make each start and end cross an account's cap (placed again in every kind).
    const ofKind = [...tasks('acctA', 3, 'a'), ...tasks('acctB', 2, 'b')];
    const ofOther = tasks('acctA', 1, 'o');
    const scenario = async (startsFirst: boolean) => {
      await redis.flushdb();
      const s = scheduler(1);
      const worker = await new Slots(s, 2).join();
      await s.submit(KIND, ofKind);
      await s.submit(OTHER, ofOther);
      const states: Array<{ waiting: Array<string | undefined>; state: Record<string, unknown> }> = [];
      for (let round = 0; round < 3; round++) {
        const runs = [await worker.take(), await worker.take(), await worker.take(OTHER)].filter((r) => r !== undefined);
        if (startsFirst) await worker.join();
        for (const run of runs) await worker.finish(run);
        states.push({ waiting: [...(await waitingIds()), ...(await waitingIds(OTHER))], state: await schedulerState() });
      }
      return states;
    };
    const along = await scenario(false);
    const first = await scenario(true);
    expect(along).toEqual(first);
    // Each end frees its account's cap: the kinds are released for in their order, the other kind's first.
    expect(along.map((s) => s.waiting)).toEqual([['task_b1', 'task_o0'], ['task_a1'], ['task_a2']]);
  });

  it('releases nothing without an idle worker slot, and one task per idle slot', async () => {
    const s = scheduler(100);
    await s.submit(KIND, tasks('acctA', 5));
    expect(await waitingIds()).toEqual([]);
    const worker = await new Slots(s, 2).join();
    expect(await waitingIds()).toEqual(['task_acctA0', 'task_acctA1']);
    // A second worker's slots add up.
    await new Slots(s, 1, 'worker-2').join();
    expect(await waitingIds()).toHaveLength(3);
    await worker.take();
    expect(await waitingIds()).toHaveLength(2);
  });

  it("a burst does not hold the kind: B's task goes to the first slot that frees", async () => {
    const s = scheduler(100);
    const worker = await new Slots(s, 2).join();
    await s.submit(KIND, tasks('acctA', 60));
    const running = [(await worker.take())!, (await worker.take())!];
    expect(running.map((r) => r.accountId)).toEqual(['acctA', 'acctA']);
    await s.submit(KIND, tasks('acctB', 1));
    expect(await waitingIds()).toEqual([]);
    await worker.finish(running[0]!);
    expect(await worker.take()).toMatchObject({ accountId: 'acctB' });
  });

  it('a freed slot goes to the account with the fewest running tasks of the kind; ties to the oldest waiting task; oldest first within an account', async () => {
    const s = scheduler(100);
    const worker = await new Slots(s, 4).join();
    await s.submit(KIND, tasks('acctA', 5));
    const a = [await worker.take(), await worker.take(), await worker.take(), await worker.take()];
    expect(a.map((r) => r!.publicId)).toEqual(['task_acctA0', 'task_acctA1', 'task_acctA2', 'task_acctA3']);
    await s.submit(KIND, tasks('acctB', 3));
    await s.submit(KIND, tasks('acctC', 3));
    const next: string[] = [];
    for (const run of a.slice(0, 3)) {
      await worker.finish(run!);
      next.push((await worker.take())!.publicId);
    }
    // B and C have none running: they go first (B's oldest task is older); then all have one
    // running, and A's waiting task is the oldest.
    expect(next).toEqual(['task_acctB0', 'task_acctC0', 'task_acctA4']);
  });

  it('one account alone gets every free slot up to its cap; the cap holds across kinds; a finish releases the next', async () => {
    const s = scheduler(3);
    const worker = await new Slots(s, 10).join();
    await s.submit(KIND, tasks('acctA', 5));
    await s.submit(OTHER, tasks('acctA', 5, 'acctAv'));
    // Ten idle slots per kind, but the account may only have 3 in service in all.
    expect([...(await waitingIds(KIND)), ...(await waitingIds(OTHER))]).toHaveLength(3);
    expect(await s.accountLoad('acctA')).toEqual({ running: 3, maxRunning: 3, waiting: 7 });
    const load = await s.load();
    expect(load.get(KIND)!.heldByCap + load.get(OTHER)!.heldByCap).toBe(7);
    expect(load.get(KIND)!.runnable + load.get(OTHER)!.runnable).toBe(0);

    const run = (await worker.take(KIND))!;
    await worker.finish(run);
    // One finished, one more released (of either kind).
    expect((await waitingIds(KIND)).length + (await waitingIds(OTHER)).length).toBe(3);
    expect(await s.accountLoad('acctA')).toEqual({ running: 3, maxRunning: 3, waiting: 6 });
  });

  it("an account's own cap applies as soon as it is set, and a reset gives back the default", async () => {
    const s = scheduler(1);
    const worker = await new Slots(s, 10).join();
    await s.submit(KIND, tasks('acctA', 6));
    expect(await waitingIds()).toHaveLength(1);
    expect(await s.setCaps(new Map([['acctA', 4]]))).toBe(1);
    expect(await waitingIds()).toHaveLength(4);
    expect(await s.setCaps(new Map([['acctA', 4]]))).toBe(0);
    expect(await s.setCaps(new Map())).toBe(1);
    expect((await s.accountLoad('acctA')).maxRunning).toBe(1);
    // Over the lowered cap: nothing more is released until enough have ended.
    for (let i = 0; i < 3; i++) await worker.finish((await worker.take())!);
    expect(await waitingIds()).toHaveLength(1);
    await worker.finish((await worker.take())!);
    expect(await waitingIds()).toHaveLength(1);
    expect(await s.accountLoad('acctA')).toEqual({ running: 1, maxRunning: 1, waiting: 1 });
  });

  it('a cancelled waiting task leaves its line at once; a released one leaves the queue and frees its place; a running one waits for its worker', async () => {
    const s = scheduler(2);
    const worker = await new Slots(s, 2).join();
    const a = tasks('acctA', 4);
    await s.submit(KIND, a);
    const running = (await worker.take())!;
    expect(await waitingIds()).toEqual([a[1]!.publicId]);
    await s.cancel(KIND, a[2]!.publicId);
    expect((await s.accountLoad('acctA')).waiting).toBe(1);
    await s.cancel(KIND, a[1]!.publicId);
    expect(await waitingIds()).toEqual([a[3]!.publicId]);
    await s.cancel(KIND, running.publicId);
    expect((await s.accountLoad('acctA')).running).toBe(2);
    await worker.finish(running);
    expect(await s.accountLoad('acctA')).toEqual({ running: 1, maxRunning: 2, waiting: 0 });
  });

  it('a handed-back task keeps its place: released again at once, to the head of the queue, under a new job id', async () => {
    const s = scheduler(10);
    const worker = await new Slots(s, 2).join();
    await s.submit(KIND, tasks('acctA', 3));
    const [first, second] = [(await worker.take())!, (await worker.take())!];
    await s.submit(KIND, tasks('acctB', 2));
    await worker.handBack(first);
    expect((await s.lookup([first.publicId])).get(first.publicId)).toMatchObject({ state: 'ready', release: 2 });
    expect((await s.accountLoad('acctA')).running).toBe(2);
    expect(await worker.take()).toMatchObject({ publicId: first.publicId, release: 2 });
    // B, with none running, gets the next slot that frees.
    await worker.finish(second);
    expect(await worker.take()).toMatchObject({ publicId: 'task_acctB0' });
  });

  it('only the current release can be handed back or retried: a late or repeated report changes nothing', async () => {
    const s = scheduler(10);
    const worker = await new Slots(s, 2).join();
    await s.submit(KIND, tasks('acctA', 2));
    const first = (await worker.take())!;
    await worker.handBack(first);
    expect((await s.lookup([first.publicId])).get(first.publicId)).toMatchObject({ state: 'ready', release: 2 });
    // The same hand-back again (a sweeper that saw release 1's job completed): nothing moves.
    await s.handBack(first);
    await s.retryLater(first, 1_000);
    expect((await s.lookup([first.publicId])).get(first.publicId)).toMatchObject({ state: 'ready', release: 2 });
    expect((await waitingIds()).filter((id) => id!.startsWith(first.publicId))).toEqual([`${first.publicId}-2`]);
  });

  it("an account held by its cap in another kind is placed again when the default cap changes", async () => {
    const s = scheduler(2);
    const worker = await new Slots(s, 5).join();
    await s.submit(KIND, tasks('acctA', 2));
    await s.submit(OTHER, tasks('acctA', 1, 'acctAv'));
    const running = [(await worker.take(KIND))!, (await worker.take(KIND))!];
    expect(await waitingIds(OTHER)).toEqual([]);
    // A deploy raises ACCOUNT_MAX_RUNNING: the workers' upkeep stores the new default.
    const raised = new FairScheduler(redis, queues, { defaultCap: 5 });
    expect(await raised.setCaps(new Map())).toBe(1);
    expect(await waitingIds(OTHER)).toEqual(['task_acctAv0']);
    // Calls of a replica still on the old value use the stored default: A is not held again.
    for (const run of running) await worker.finish(run);
    expect(await s.accountLoad('acctA')).toMatchObject({ running: 1, maxRunning: 5 });
  });

  it('the recount rebuilds running counts a corrupt record left behind', async () => {
    const s = scheduler(2);
    const worker = await new Slots(s, 5).join();
    await s.submit(KIND, tasks('acctA', 4));
    const run = (await worker.take())!;
    await worker.finish((await worker.take())!);
    // The running task's record is broken: its worker's end can no longer tell whose it was.
    await redis.hset('taskapi:{sched}:tasks', run.publicId, 'garbage');
    await worker.finish(run);
    expect(skipped).toContain(run.publicId);
    // Its count stayed: A looks at its cap of 2 with one task in service, and nothing is released.
    expect((await s.accountLoad('acctA')).running).toBe(2);
    expect(await s.inService(KIND)).toHaveLength(1);
    expect(await s.recount()).toBe(1);
    // Counted right again, A's room is used at once.
    expect(await s.inService(KIND)).toHaveLength(2);
    expect((await s.accountLoad('acctA')).running).toBe(2);
    expect(await s.recount()).toBe(0);
  });

  it('a retry waits its delay still counted as running, then goes straight back to the head of the queue', async () => {
    const s = scheduler(1);
    const worker = await new Slots(s, 1).join();
    await s.submit(KIND, tasks('acctA', 2));
    const run = (await worker.take())!;
    await worker.retry(run, 300);
    expect(await s.lookup([run.publicId])).toEqual(new Map([[run.publicId, { state: 'delayed', kind: KIND, accountId: 'acctA', release: 1 }]]));
    expect(await waitingIds()).toEqual([]);
    expect((await s.accountLoad('acctA')).running).toBe(1);
    // Upkeep ticks (as the workers run them) release it once its time has come.
    const released = await waitFor(
      async () => {
        await s.tick();
        const ids = await waitingIds();
        return ids.length > 0 ? ids : undefined;
      },
      { timeoutMs: 5_000, intervalMs: 50, what: 'the retry to be released' },
    );
    expect(released).toEqual([`${run.publicId}-2`]);
  });

  it('a stopped worker’s slots take no more work; a worker not heard from for 10 s is taken for gone', async () => {
    const s = scheduler(100);
    const first = await new Slots(s, 2, 'worker-1').join();
    await s.leave(first.workerId);
    await s.submit(KIND, tasks('acctA', 3));
    expect(await waitingIds()).toEqual([]);
    await new Slots(s, 1, 'worker-2').join();
    expect(await waitingIds()).toHaveLength(1);
    // worker-2 falls silent (its last report 11 s ago): the next call forgets its slots.
    await redis.zadd('taskapi:{sched}:workers', Date.now() - 11_000, 'worker-2');
    await s.tick();
    expect(await redis.hgetall(`taskapi:{sched}:slots:${KIND}`)).toEqual({});
  });

  it('corrupt or contradicting entries are dropped and reported; the kind keeps moving', async () => {
    const s = scheduler(10);
    const worker = await new Slots(s, 1).join();
    const a = tasks('acctA', 3);
    await s.submit(KIND, a);
    const first = (await worker.take())!;
    // An id nobody knows at the head of the line, and the next task's record broken.
    await redis.zadd(`taskapi:{sched}:line:${KIND}:acctA`, 0, 'task_unknown');
    await redis.hset('taskapi:{sched}:tasks', a[1]!.publicId, 'garbage');
    await worker.finish(first);
    expect(skipped).toEqual(['task_unknown', a[1]!.publicId]);
    expect(await waitingIds()).toEqual([a[2]!.publicId]);
    // The corrupt record is gone too: the sweeper gives the task back as it would after a Redis loss.
    expect(await s.lookup([a[1]!.publicId])).toEqual(new Map());
    expect(await s.submit(KIND, [a[1]!])).toBe(1);
    expect((await s.lookup([a[1]!.publicId])).get(a[1]!.publicId)).toMatchObject({ state: 'pending' });
    // A record that is garbage (a done for it) is dropped and reported as well.
    await redis.hset('taskapi:{sched}:tasks', 'task_garbage', 'p|x');
    await s.done('task_garbage');
    expect(skipped).toEqual(['task_unknown', a[1]!.publicId, 'task_garbage']);
  });

  it('a job it did not release (queued by an earlier release) counts from its start; submit is idempotent', async () => {
    const s = scheduler(1);
    const worker = await new Slots(s, 1).join();
    const legacy: TaskRunRef = { kind: KIND, publicId: 'task_legacy', accountId: 'acctL', order: '1', createdAt: new Date(), release: 1 };
    await s.report({ workerId: worker.workerId, idle: { [KIND]: 0 }, started: [legacy] });
    await s.submit(KIND, tasks('acctL', 1));
    expect(await waitingIds()).toEqual([]);
    expect(await s.submit(KIND, [{ publicId: 'task_legacy', accountId: 'acctL', order: '1', createdAt: new Date() }])).toBe(0);
    await s.done('task_legacy', { workerId: worker.workerId, idle: { [KIND]: 1 }, started: [] });
    expect(await waitingIds()).toEqual(['task_acctL0']);
    expect(await s.inService(KIND)).toEqual(['task_acctL0']);
  });

  it("a released task holds its slot until its start is reported with the worker's next call", async () => {
    const s = scheduler(100);
    const worker = await new Slots(s, 2).join();
    await s.submit(KIND, tasks('acctA', 5));
    const [first] = [await worker.take(), await worker.take()];
    expect((await s.lookup([first!.publicId])).get(first!.publicId)?.state).toBe('ready');
    // Nothing more while both slots are taken, reported or not; the end of one reports both starts.
    await s.tick();
    expect(await waitingIds()).toEqual([]);
    await worker.finish(first!);
    expect(await waitingIds()).toEqual(['task_acctA2']);
    expect((await s.lookup(['task_acctA1'])).get('task_acctA1')?.state).toBe('active');
  });

  it('reports per kind what could run now, what its cap holds, and the oldest runnable task', async () => {
    const s = scheduler(2);
    const worker = await new Slots(s, 1).join();
    const old = { publicId: 'task_old', accountId: 'acctO', order: String(++order), createdAt: new Date(Date.now() - 60_000) };
    await s.submit(KIND, [old]);
    await worker.take();
    await s.submit(KIND, tasks('acctA', 5));
    const load = (await s.load()).get(KIND)!;
    // No idle slot. A has none running and a cap of 2: 2 could run now, 3 are held.
    expect(load).toMatchObject({ runnable: 2, heldByCap: 3 });
    expect(load.nowMs - load.oldestWaitingCreatedMs!).toBeLessThan(5_000);
    expect((await s.load()).get(OTHER)).toMatchObject({ runnable: 0, heldByCap: 0, oldestWaitingCreatedMs: undefined });
  });
});
