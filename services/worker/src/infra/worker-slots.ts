import { randomBytes } from 'node:crypto';
import os from 'node:os';
import type { TaskKind } from '@taskapi/domain';
import type { IdleSlots, SlotReport } from '@taskapi/scheduler';

/**
 * This process's worker slots per kind (`WORKER_CONCURRENCY` each), as the scheduler needs to know
 * them: it releases tasks only for idle slots (docs/fair-scheduling.md).
 */
export class WorkerSlots {
  /** Unique per process; readable in Redis (host, pid). */
  readonly workerId = `${os.hostname()}/${process.pid}/${randomBytes(4).toString('hex')}`;
  private readonly busy = new Map<TaskKind, number>();
  private closing = false;

  constructor(
    private readonly kinds: readonly TaskKind[],
    private readonly concurrency: number,
  ) {}

  /** A run took one of the kind's slots. */
  take(kind: TaskKind): void {
    this.busy.set(kind, (this.busy.get(kind) ?? 0) + 1);
  }

  /** A run gave its slot back (its job ended). */
  free(kind: TaskKind): void {
    this.busy.set(kind, Math.max(0, (this.busy.get(kind) ?? 0) - 1));
  }

  /**
   * The report for a start (`ending` false) or an end (`ending` true: the run's slot counts as
   * idle, BullMQ hands it the next job as the run's job ends). A closing worker has none idle.
   */
  report(kind: TaskKind, ending: boolean): SlotReport {
    return { workerId: this.workerId, kind, idle: this.idleOf(kind, ending ? 1 : 0) };
  }

  /** Every kind's idle slots, for the heartbeat. */
  idle(): IdleSlots {
    return Object.fromEntries(this.kinds.map((kind) => [kind, this.idleOf(kind, 0)]));
  }

  /** From now on no slot takes work (the worker is stopping). */
  close(): void {
    this.closing = true;
  }

  private idleOf(kind: TaskKind, ending: number): number {
    return this.closing ? 0 : Math.max(0, this.concurrency - (this.busy.get(kind) ?? 0) + ending);
  }
}
