import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { TaskKind } from '@taskapi/task-kinds';
import type { IdleSlots, TaskRunRef, WorkerReport } from '@taskapi/scheduler';

/** A start waits at most this long for another call to the scheduler to carry it. */
const START_REPORT_DELAY_MS = 50;

/**
 * This process's worker slots per kind (`WORKER_CONCURRENCY` each), as the scheduler needs to know
 * them (docs/fair-scheduling.md): it releases tasks only for idle slots. Every call this worker
 * makes to the scheduler carries a report: the runs started since the previous one, and the slots
 * not running a reported start. A start rides along with the next call (a run's end, usually
 * moments later) instead of costing a call of its own; one that finds none goes alone after
 * START_REPORT_DELAY_MS.
 */
export class WorkerSlots {
  /** Unique per process; readable in Redis (host, pid). */
  readonly workerId = `${os.hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
  private readonly pending = new Map<string, TaskRunRef>();
  private readonly reported = new Map<string, TaskRunRef>();
  /**
   * Runs whose end a call is telling the scheduler. From that call on the scheduler gives their
   * slots to the next tasks (released, they hold the slots until their starts are reported), so
   * no call counts them as busy, though their jobs end a little later: a report made meanwhile
   * that counted them would hide an idle slot (with short runs ending together, the next end
   * released nothing, BullMQ's fetch came back empty and its blocking wait took the next job).
   */
  private readonly ending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private closing = false;

  constructor(
    private readonly kinds: readonly TaskKind[],
    private readonly concurrency: number,
    /** Sends a report alone (when a start found no call to ride along with). */
    private readonly flush: (send: WorkerSlots['send']) => void,
    /** How many runs of a kind this worker may have at once, when fewer than `concurrency` (a model server's capacity). */
    private readonly limitOf: (kind: TaskKind) => number = () => concurrency,
  ) {}

  /** A run started (its task claimed); the scheduler hears of it with this worker's next call. */
  started(run: TaskRunRef): void {
    this.pending.set(run.publicId, run);
    this.timer ??= setTimeout(() => {
      this.timer = undefined;
      this.flush(this.send);
    }, START_REPORT_DELAY_MS);
  }

  /**
   * Makes one call to the scheduler with this worker's report. `ending`: the run this call ends
   * (its slot counts as idle: BullMQ hands it the next job as the run's job ends), from this call
   * on, in every call. If the call fails, the starts it carried are reported with the next one,
   * and the run it was to end counts as busy again.
   */
  send = async (call: (report: WorkerReport) => Promise<void>, ending?: TaskRunRef): Promise<void> => {
    clearTimeout(this.timer);
    this.timer = undefined;
    const started = [...this.pending.values()];
    for (const run of started) this.reported.set(run.publicId, run);
    this.pending.clear();
    if (ending) this.ending.add(ending.publicId);
    const idle: IdleSlots = {};
    for (const kind of this.kinds) {
      let busy = 0;
      for (const r of this.reported.values()) if (r.kind === kind && !this.ending.has(r.publicId)) busy++;
      idle[kind] = this.closing ? 0 : Math.max(0, Math.min(this.concurrency, this.limitOf(kind)) - busy);
    }
    try {
      await call({ workerId: this.workerId, idle, started });
    } catch (err) {
      // The scheduler did not take the report: its starts go with the next one, but not those of
      // runs that have ended meanwhile (their end told the scheduler all it needs).
      for (const run of started) {
        if (!this.reported.delete(run.publicId)) continue;
        this.pending.set(run.publicId, run);
      }
      if (ending) this.ending.delete(ending.publicId);
      throw err;
    }
  };

  /** A run's job ended: its slot is free. */
  ended(run: TaskRunRef): void {
    this.pending.delete(run.publicId);
    this.reported.delete(run.publicId);
    this.ending.delete(run.publicId);
  }

  /** From now on no slot takes work (the worker is stopping). */
  close(): void {
    this.closing = true;
  }
}
