import { PROGRESS_WRITES_PER_SECOND, roundProgress } from '@taskapi/domain';

/**
 * Before this much of a run has passed its progress is not written: a run that ends sooner (a
 * small image, a face detection) writes none, its terminal transition storing its final progress.
 * The marker write and event it saves are one Redis call in every 16 of such a task
 * (docs/performance.md, "Cost per task in every process"); a longer run shows its progress a tenth
 * of a second in.
 */
export const FIRST_PROGRESS_WRITE_MS = 100;

/**
 * One run's progress reports, throttled to PROGRESS_WRITES_PER_SECOND: written at most every
 * 500 ms, the first FIRST_PROGRESS_WRITE_MS into the run, always the latest value (a change that
 * arrives during the wait is written when it ends). Values that round to the stored one are not
 * written again.
 */
export class ProgressThrottle {
  private stored: number | null = null;
  private latest: number | null = null;
  /** As if written just before the run: the first write comes FIRST_PROGRESS_WRITE_MS into it. */
  private lastWriteAt: number;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly write: (progress: number) => Promise<void>,
    private readonly onError: (err: unknown) => void,
    private readonly intervalMs = 1000 / PROGRESS_WRITES_PER_SECOND,
    firstWriteMs = FIRST_PROGRESS_WRITE_MS,
  ) {
    this.lastWriteAt = Date.now() - intervalMs + firstWriteMs;
  }

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
