// Steering inside an account (docs/fair-scheduling.md, "Inside an account"), on a private
// redis-server with real BullMQ queues: priority as a time offset within an account and kind, the
// turns across fairness keys, deadlines (never released after), where a queued task stands, bulk
// cancels, and the operators' views. The share between accounts is fair-scheduler.test.ts's.
import { Redis } from 'ioredis';
import { Worker, type Job } from 'bullmq';
import type { TaskKind } from '@taskapi/task-kinds';
import { TASK_QUEUES, closeQueues, createTaskQueues, type TaskJob, type TaskQueues } from '@taskapi/queue';
import { startPrivateRedis, type PrivateRedis } from '@taskapi/testing';
import { FairScheduler, type NewTask, type TaskRunRef, type WorkerReport } from '../src';

const KIND: TaskKind = 'image-generation';
const TOKEN = 'steering-test';

let server: PrivateRedis;
let redis: Redis;
let queues: TaskQueues;
let consumer: Worker<TaskJob>;
let consumerRedis: Redis;
let order = 0;
const t0 = Date.now() - 60_000;

beforeAll(async () => {
  server = await startPrivateRedis();
  redis = new Redis(server.url, { maxRetriesPerRequest: 1 });
  queues = createTaskQueues(redis);
  consumerRedis = redis.duplicate({ maxRetriesPerRequest: null });
  consumer = new Worker<TaskJob>(TASK_QUEUES[KIND].name, undefined, { connection: consumerRedis, autorun: false });
});
afterAll(async () => {
  await consumer.close();
  consumerRedis.disconnect();
  await closeQueues(Object.values(queues.queues));
  redis.disconnect();
  await server.stop();
});
beforeEach(async () => {
  await redis.flushdb();
});

const scheduler = (defaultCap = 100) => new FairScheduler(redis, queues, { defaultCap });

/** A task of the account created `atMs` after t0, in creation order. */
function task(account: string, name: string, atMs: number, extra: Partial<NewTask> = {}): NewTask {
  return { publicId: `task_${name}`, accountId: account, order: String(++order), createdAt: new Date(t0 + atMs), ...extra };
}

/** One worker with `size` slots of the kind: takes released jobs and reports as the worker service does. */
class Worker1 {
  private pending: TaskRunRef[] = [];
  private readonly running = new Map<string, { run: TaskRunRef; job: Job<TaskJob> }>();
  constructor(
    private readonly s: FairScheduler,
    private readonly size: number,
  ) {}
  report(ending?: string): WorkerReport {
    const started = this.pending.splice(0);
    const busy = [...this.running.keys()].filter((id) => id !== ending).length;
    return { workerId: 'w1', idle: { [KIND]: this.size - busy }, started };
  }
  async join(): Promise<this> {
    await this.s.report(this.report());
    return this;
  }
  /** Takes the next released job: its task's id. */
  async take(): Promise<string | undefined> {
    const job = (await consumer.getNextJob(TOKEN, { block: false })) as Job<TaskJob> | undefined;
    if (!job) return undefined;
    const run: TaskRunRef = { kind: KIND, publicId: job.data.public_id, accountId: job.data.account_id!, order: '0', createdAt: new Date(), release: job.data.release ?? 1 };
    this.pending.push(run);
    this.running.set(run.publicId, { run, job });
    return run.publicId;
  }
  async finish(publicId: string): Promise<void> {
    await this.s.done(publicId, this.report(publicId));
    await this.running.get(publicId)!.job.moveToCompleted('ok', TOKEN, false);
    this.running.delete(publicId);
  }
  /** Runs `n` tasks one after the other (each taken, then finished): their ids in that order. */
  async runEach(n: number): Promise<string[]> {
    const started: string[] = [];
    for (let i = 0; i < n; i++) {
      const id = (await this.take())!;
      started.push(id);
      await this.finish(id);
    }
    return started;
  }
  /** Takes every job released so far. */
  async takeAll(): Promise<string[]> {
    const taken: string[] = [];
    for (let id = await this.take(); id; id = await this.take()) taken.push(id);
    return taken;
  }
}

describe('priority', () => {
  it('places a task as if created `priority` seconds earlier (negative: later), within its account and kind only', async () => {
    const s = scheduler();
    await s.submit(KIND, [
      task('acctA', 'a1', 0),
      task('acctA', 'a2', 1_000),
      task('acctA', 'a3', 2_000, { priority: 5 }),
      task('acctA', 'a4', 3_000, { priority: -10 }),
      task('acctA', 'a5', 3_000),
    ]);
    const w = await new Worker1(s, 1).join();
    const started = await w.runEach(5);
    expect(started).toEqual(['task_a3', 'task_a1', 'task_a2', 'task_a5', 'task_a4']);
  });

  it('never changes the share between accounts: an account with a high priority does not jump another account', async () => {
    const s = scheduler();
    await s.submit(KIND, [task('acctA', 'pa1', 0), task('acctB', 'pb1', 1_000, { priority: 86_400 })]);
    const w = await new Worker1(s, 1).join();
    expect(await w.take()).toBe('task_pa1');
  });

  it('ties in time go by creation order (a batch created in one instant keeps its order)', async () => {
    const s = scheduler();
    const batch = Array.from({ length: 12 }, (_, i) => task('acctA', `b${i}`, 5_000));
    await s.submit(KIND, [...batch].reverse());
    const w = await new Worker1(s, 12).join();
    expect(await w.takeAll()).toEqual(batch.map((t) => t.publicId));
  });
});

describe('fairness keys', () => {
  it('take turns inside an account: the next task comes from the key with the fewest running (ties: the oldest by priority), keyless tasks a group of their own', async () => {
    const s = scheduler(3);
    await s.submit(KIND, [
      ...Array.from({ length: 5 }, (_, i) => task('acctA', `u1-${i}`, i, { fairnessKey: 'user-1' })),
      task('acctA', 'u2-0', 100, { fairnessKey: 'user-2' }),
      task('acctA', 'u2-1', 101, { fairnessKey: 'user-2' }),
      task('acctA', 'none-0', 200),
    ]);
    const w = await new Worker1(s, 10).join();
    // The cap (3) lets three run: one of each group, oldest group head first.
    expect(await w.takeAll()).toEqual(['task_u1-0', 'task_u2-0', 'task_none-0']);
    // user-2's run ends: every group has one running but user-2 (0): its next goes.
    await w.finish('task_u2-0');
    expect(await w.takeAll()).toEqual(['task_u2-1']);
    // The keyless group's run ends: it has nothing left, nor has user-2; user-1's next goes.
    await w.finish('task_none-0');
    expect(await w.takeAll()).toEqual(['task_u1-1']);
    expect((await s.accountGroups('acctA')).sort((a, b) => (a.fairnessKey ?? '').localeCompare(b.fairnessKey ?? ''))).toEqual([
      { kind: KIND, fairnessKey: 'user-1', waiting: 3, running: 2 },
      { kind: KIND, fairnessKey: 'user-2', waiting: 0, running: 1 },
    ]);
  });
});

describe('deadlines', () => {
  it('a pending task well past its deadline is never released: it leaves its line, reported as expired; one just past it is (the claim decides)', async () => {
    const s = scheduler();
    // Redis's clock may run ahead of PostgreSQL's, whose claim refuses a task past its deadline:
    // only a task more than 5 s past it by Redis's clock is dropped here.
    await s.submit(KIND, [
      task('acctA', 'gone', 0, { expiresAt: new Date(Date.now() - 6_000) }),
      task('acctA', 'just', 5, { expiresAt: new Date(Date.now() - 1) }),
      task('acctA', 'kept', 10, { expiresAt: new Date(Date.now() + 60_000) }),
    ]);
    const w = await new Worker1(s, 5).join();
    expect(await w.takeAll()).toEqual(['task_just', 'task_kept']);
    expect((await s.lookup(['task_gone'])).size).toBe(0);
    expect((await s.accountLoad('acctA')).waiting).toBe(0);
  });
});

describe('where a queued task stands', () => {
  it('ahead: how many of its account, kind and key start before it (a rank, not a scan); held: the account at its cap', async () => {
    const s = scheduler(1);
    const mine = Array.from({ length: 4 }, (_, i) => task('acctA', `q${i}`, i * 1_000, { fairnessKey: 'k' }));
    const placed = await s.submitAndPlace(KIND, [...mine, task('acctA', 'other-key', 500, { fairnessKey: 'j' }), task('acctA', 'urgent', 9_000, { fairnessKey: 'k', priority: 60 })]);
    expect(placed.joined).toBe(6);
    const positions = await s.positions(['task_q0', 'task_q1', 'task_q3', 'task_urgent', 'task_other-key', 'task_unknown']);
    expect(Object.fromEntries([...positions].map(([id, p]) => [id, [p.ahead, p.heldByCap]]))).toEqual({
      task_q0: [1, false],
      task_q1: [2, false],
      task_q3: [4, false],
      task_urgent: [0, false],
      'task_other-key': [0, false],
    });
    expect(placed.positions.get('task_q3')).toEqual({ state: 'pending', ahead: 4, heldByCap: false });
    // A slot frees: one task starts (k's head, urgent); the account is at its cap of 1.
    const w = await new Worker1(s, 1).join();
    expect(await w.take()).toBe('task_urgent');
    await s.report(w.report());
    const after = await s.positions(['task_q0', 'task_q3']);
    expect(after.get('task_q0')).toEqual({ state: 'pending', ahead: 0, heldByCap: true });
    expect(after.get('task_q3')).toEqual({ state: 'pending', ahead: 3, heldByCap: true });
  });

  it('stays a rank in a line of 20,000 tasks', async () => {
    const s = scheduler();
    const line = Array.from({ length: 20_000 }, (_, i) => task('acctBig', `big${i}`, i));
    for (let i = 0; i < line.length; i += 2_000) await s.submit(KIND, line.slice(i, i + 2_000));
    const p = await s.positions(['task_big19999', 'task_big0', 'task_big10000']);
    expect([p.get('task_big0')!.ahead, p.get('task_big10000')!.ahead, p.get('task_big19999')!.ahead]).toEqual([0, 10_000, 19_999]);
  });
});

describe('bulk cancel and the operators\' views', () => {
  it('cancelMany takes pending tasks out of their lines and released ones out of the queue, in one call', async () => {
    const s = scheduler(2);
    await s.submit(KIND, [task('acctA', 'c0', 0), task('acctA', 'c1', 1), task('acctA', 'c2', 2), task('acctA', 'c3', 3)]);
    const w = await new Worker1(s, 1).join();
    expect(await w.take()).toBe('task_c0');
    await s.report(w.report());
    // c0 active, c1 released for a second slot, c2 and c3 pending.
    await s.report({ workerId: 'w2', idle: { [KIND]: 1 }, started: [] });
    expect((await queues.queues[KIND].getWaiting()).map((j) => j.id)).toEqual(['task_c1']);
    await s.cancelMany(KIND, ['task_c1', 'task_c2', 'task_c3', 'task_c0', 'task_never']);
    expect(await queues.queues[KIND].getWaiting()).toEqual([]);
    expect([...(await s.lookup(['task_c0', 'task_c1', 'task_c2', 'task_c3'])).keys()]).toEqual(['task_c0']);
    expect(await s.accountLoad('acctA')).toEqual({ running: 1, maxRunning: 2, waiting: 0 });
  });

  it("a bulk cancel of an account's oldest tasks moves it back in the order between accounts, and its emptied key out of the turns", async () => {
    const s = scheduler();
    // A's two oldest (key x), then B's, then A's last (key y).
    await s.submit(KIND, [task('acctA', 'a0', 0, { fairnessKey: 'x' }), task('acctA', 'a1', 1, { fairnessKey: 'x' }), task('acctB', 'b0', 2), task('acctA', 'a2', 3, { fairnessKey: 'y' })]);
    await s.cancelMany(KIND, ['task_a0', 'task_a1']);
    expect(await s.accountGroups('acctA')).toEqual([{ kind: KIND, fairnessKey: 'y', waiting: 1, running: 0 }]);
    // B's task is now the oldest of both accounts: it goes first, then A's.
    const w = await new Worker1(s, 1).join();
    expect(await w.take()).toBe('task_b0');
    await w.finish('task_b0');
    expect(await w.take()).toBe('task_a2');
  });

  it('waiting pages, and per account what runs and waits', async () => {
    const s = scheduler(1);
    await s.submit(KIND, [task('acctA', 'w0', 0, { fairnessKey: 'x', priority: 30, expiresAt: new Date(t0 + 3_600_000) }), task('acctA', 'w1', 1), task('acctB', 'w2', 2)]);
    const w = await new Worker1(s, 1).join();
    expect(await w.take()).toBe('task_w0');
    await s.report(w.report());
    const page = await s.waiting(KIND, 0, 10);
    expect(page.total).toBe(2);
    expect(page.tasks.map((t) => [t.publicId, t.accountId, t.heldByCap])).toEqual([
      ['task_w2', 'acctB', false],
      ['task_w1', 'acctA', true],
    ]);
    expect((await s.waiting(KIND, 1, 10)).tasks.map((t) => t.publicId)).toEqual(['task_w1']);
    expect((await s.accountsOf(KIND)).sort((a, b) => a.accountId.localeCompare(b.accountId))).toEqual([
      { accountId: 'acctA', running: 1, waiting: 1, runningAllKinds: 1, cap: 1 },
      { accountId: 'acctB', running: 0, waiting: 1, runningAllKinds: 0, cap: 1 },
    ]);
    // A waiting task's own fields come back as they were given.
    await w.finish('task_w0');
    await s.submit(KIND, [task('acctC', 'w3', 3, { fairnessKey: 'u@x', priority: -20, expiresAt: new Date(t0 + 7_200_000) })]);
    const c = (await s.waiting(KIND, 0, 10)).tasks.find((t) => t.publicId === 'task_w3')!;
    expect(c).toMatchObject({ fairnessKey: 'u@x', priority: -20, expiresAt: new Date(t0 + 7_200_000), createdAt: new Date(t0 + 3) });
  });

  it('a record of the previous release (no priority, deadline or key) still runs, and the recount rebuilds the keys\' counts', async () => {
    const s = scheduler();
    // As the previous release wrote it: six fields, the task in its account's line only.
    await redis.hset('taskapi:{sched}:tasks', 'task_old', `p|${KIND}|acctOld|7|0|${t0}`);
    await redis.zadd(`taskapi:{sched}:line:${KIND}:acctOld`, 7, 'task_old');
    await redis.zadd(`taskapi:{sched}:eligible:${KIND}`, 7, 'acctOld');
    const w = await new Worker1(s, 1).join();
    expect(await w.take()).toBe('task_old');
    await s.report(w.report());
    await redis.del(`taskapi:{sched}:grunning:${KIND}:acctOld`);
    await s.recount();
    expect(await redis.hget(`taskapi:{sched}:grunning:${KIND}:acctOld`, '*')).toBe('1');
  });

  it("an account's backlog of the previous release keeps its place ahead of the tasks created after the upgrade", async () => {
    const s = scheduler();
    // Three tasks as the previous release left them, then two new ones of the same account: a
    // keyless one (the same group as the old ones) and one with a key.
    for (const [i, id] of ['old0', 'old1', 'old2'].entries()) {
      await redis.hset('taskapi:{sched}:tasks', `task_${id}`, `p|${KIND}|acctUp|${i + 1}|0|${t0 + i}`);
      await redis.zadd(`taskapi:{sched}:line:${KIND}:acctUp`, i + 1, `task_${id}`);
    }
    await redis.zadd(`taskapi:{sched}:eligible:${KIND}`, 1, 'acctUp');
    order = 10;
    await s.submit(KIND, [task('acctUp', 'new0', 10), task('acctUp', 'new1', 11, { fairnessKey: 'k' })]);
    // The old ones' places, read from their account's line until they join their group's.
    const places = await s.positions(['task_old1', 'task_old2']);
    expect([places.get('task_old1')!.ahead, places.get('task_old2')!.ahead]).toEqual([1, 2]);
    const w = await new Worker1(s, 1).join();
    const started = await w.runEach(5);
    // One at a time, nothing else running: every turn goes to the oldest head, so the old
    // backlog (keyless, one group) runs first, in its order, then the new tasks.
    expect(started).toEqual(['task_old0', 'task_old1', 'task_old2', 'task_new0', 'task_new1']);
  });

  it('a task without priority, deadline or key is recorded in the six fields the previous release reads', async () => {
    const s = scheduler();
    await s.submit(KIND, [task('acctF', 'plain', 0), task('acctF', 'steered', 1, { priority: 5 })]);
    expect(await redis.hget('taskapi:{sched}:tasks', 'task_plain')).toMatch(/^p\|image-generation\|acctF\|\d+\|0\|\d+$/);
    expect((await redis.hget('taskapi:{sched}:tasks', 'task_steered'))!.split('|')).toHaveLength(9);
  });
});
