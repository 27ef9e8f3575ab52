// WorkerSlots: the report every call of a worker carries (docs/fair-scheduling.md, "Releases for idle slots"):
// which starts ride along, and how many slots it says are idle while runs end.
import type { TaskRunRef, WorkerReport } from '@taskapi/scheduler';
import { WorkerSlots } from '../src';

const KIND = 'image-generation' as const;
const run = (publicId: string): TaskRunRef => ({ kind: KIND, publicId, accountId: 'acct', order: '1', createdAt: new Date(0), release: 1 });

/** A call that keeps the report it carried, and settles when the test says. */
function call() {
  let settle!: (err?: Error) => void;
  const reports: WorkerReport[] = [];
  const done = new Promise<void>((resolve, reject) => (settle = (err) => (err ? reject(err) : resolve())));
  return {
    reports,
    settle,
    fn: (report: WorkerReport) => {
      reports.push(report);
      return done;
    },
  };
}

async function reportOf(slots: WorkerSlots): Promise<WorkerReport> {
  const c = call();
  c.settle();
  await slots.send(c.fn);
  return c.reports[0]!;
}

describe('WorkerSlots', () => {
  const all: WorkerSlots[] = [];
  afterEach(() => {
    // Pending start timers would keep jest waiting.
    for (const s of all.splice(0)) void s.send(() => Promise.resolve());
  });
  const slots = (concurrency: number) => {
    const s = new WorkerSlots([KIND], concurrency, () => undefined);
    all.push(s);
    return s;
  };

  it('a start rides along with the next call; a run counts as busy once its start is reported', async () => {
    const s = slots(4);
    s.started(run('a'));
    s.started(run('b'));
    const first = await reportOf(s);
    expect(first.started.map((r) => r.publicId)).toEqual(['a', 'b']);
    expect(first.idle).toEqual({ [KIND]: 2 });
    const second = await reportOf(s);
    expect(second.started).toEqual([]);
    expect(second.idle).toEqual({ [KIND]: 2 });
  });

  it('a run whose end is being told counts as idle in every call from then on, and busy again when that call fails', async () => {
    const s = slots(4);
    for (const id of ['a', 'b', 'c', 'd']) s.started(run(id));
    expect((await reportOf(s)).idle).toEqual({ [KIND]: 0 });
    // a's end is in flight when b's is told: both slots are the scheduler's to give.
    const endA = call();
    const sentA = s.send(endA.fn, run('a'));
    expect(endA.reports[0]!.idle).toEqual({ [KIND]: 1 });
    const endB = call();
    const sentB = s.send(endB.fn, run('b'));
    expect(endB.reports[0]!.idle).toEqual({ [KIND]: 2 });
    endB.settle();
    await sentB;
    // b's end was told; its job has not ended yet: its slot stays idle.
    expect((await reportOf(s)).idle).toEqual({ [KIND]: 2 });
    endA.settle(new Error('Redis unavailable'));
    await expect(sentA).rejects.toThrow('Redis unavailable');
    // a's end did not reach the scheduler: a counts as busy again.
    expect((await reportOf(s)).idle).toEqual({ [KIND]: 1 });
    s.ended(run('b'));
    expect((await reportOf(s)).idle).toEqual({ [KIND]: 1 });
    // Its end told again, then its job ended.
    const again = call();
    again.settle();
    await s.send(again.fn, run('a'));
    expect(again.reports[0]!.idle).toEqual({ [KIND]: 2 });
    s.ended(run('a'));
    expect((await reportOf(s)).idle).toEqual({ [KIND]: 2 });
  });

  it('the starts of a failed call go with the next one, but not that of a run that ended meanwhile', async () => {
    const s = slots(2);
    s.started(run('a'));
    s.started(run('b'));
    const failing = call();
    const sent = s.send(failing.fn);
    expect(failing.reports[0]!.started.map((r) => r.publicId)).toEqual(['a', 'b']);
    s.ended(run('b'));
    failing.settle(new Error('Redis unavailable'));
    await expect(sent).rejects.toThrow('Redis unavailable');
    const next = await reportOf(s);
    expect(next.started.map((r) => r.publicId)).toEqual(['a']);
    expect(next.idle).toEqual({ [KIND]: 1 });
  });
});
