// How far a running task is, from 0 to 1 (docs/architecture.md, "Progress and task events"). While
// it runs, progress lives in one small Redis key beside the task's status marker (same hash tag),
// written at most twice a second by the worker running it (`ProgressThrottle`), never in
// PostgreSQL; the terminal transition keeps the last value in `tasks.progress`.
//
// Every change a client could watch for is announced on TASK_CHANGED_CHANNEL (`account public_id`):
// a status change that is not terminal (the terminal ones go to TASK_FINISHED_CHANNEL, beside the
// marker) and each stored progress value. API replicas wake the task's event streams with it.
import { domainScripts } from './domain-scripts';
import type { MarkerRedis } from './task-status-marker';

/** Pub/sub channel of non-terminal changes: `accountId publicId` (progress) or `accountId publicId status`. */
export const TASK_CHANGED_CHANNEL = 'taskapi:task-changed';

/** The progress key shares the account's hash tag with the status marker and the rate-limit keys. */
export function taskProgressKey(accountId: string, publicId: string): string {
  return `taskapi:task:{${accountId}}:${publicId}:progress`;
}

/** As long as a non-terminal status marker: a task that runs longer than this just loses its bar. */
const PROGRESS_TTL_SECONDS = 24 * 3600;

/** Most writes of one task's progress per second. */
export const PROGRESS_WRITES_PER_SECOND = 2;

/** Progress as the task JSON shows it: from 0 to 1, two decimals. NaN and out-of-range values are clamped. */
export function roundProgress(fraction: number): number {
  if (!(fraction > 0)) return 0;
  return fraction >= 1 ? 1 : Math.floor(fraction * 100) / 100;
}

/** Parses a stored progress value; null when there is none or it is not one. */
export function parseProgress(value: string | null | undefined): number | null {
  if (value === null || value === undefined || value === '') return null;
  const n = Number(value);
  return Number.isFinite(n) && n >= 0 && n <= 1 ? n : null;
}

const recordProgressScript = domainScripts.define({
  command: 'record-progress',
  keys: (i: { accountId: string; publicId: string; progress: number }) => [taskProgressKey(i.accountId, i.publicId)],
  args: (i) => [String(i.progress), PROGRESS_TTL_SECONDS, TASK_CHANGED_CHANNEL, `${i.accountId} ${i.publicId}`],
  reply: () => undefined,
});

/** Stores a running task's progress (already rounded) and announces the change: one round trip. */
export function recordTaskProgress(redis: MarkerRedis, accountId: string, publicId: string, progress: number): Promise<void> {
  return recordProgressScript(redis, { accountId, publicId, progress });
}

/**
 * One run's progress reports, throttled to PROGRESS_WRITES_PER_SECOND: the first change is written
 * at once, later ones at most every 500 ms, always the latest value (a change that arrives during
 * the wait is written when it ends). Values that round to the stored one are not written again.
 */
export class ProgressThrottle {
  private stored: number | null = null;
  private latest: number | null = null;
  private lastWriteAt = -Infinity;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly write: (progress: number) => Promise<void>,
    private readonly onError: (err: unknown) => void,
    private readonly intervalMs = 1000 / PROGRESS_WRITES_PER_SECOND,
  ) {}

  /** The engine's report: `fraction` from 0 to 1. */
  report = (fraction: number): void => {
    if (this.stopped) return;
    this.latest = roundProgress(fraction);
    if (this.latest === this.stored || this.timer) return;
    const wait = this.lastWriteAt + this.intervalMs - Date.now();
    if (wait <= 0) this.flush();
    else this.timer = setTimeout(() => this.flush(), wait);
  };

  /** The last value reported (rounded), for the terminal transition to keep; null when none was. */
  get last(): number | null {
    return this.latest;
  }

  /** No more writes; resolves once a write in progress has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.writing;
  }

  private flush(): void {
    this.timer = undefined;
    if (this.stopped || this.latest === null || this.latest === this.stored) return;
    const value = this.latest;
    this.stored = value;
    this.lastWriteAt = Date.now();
    this.writing = this.write(value).catch(this.onError);
  }
}
