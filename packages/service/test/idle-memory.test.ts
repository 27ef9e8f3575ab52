import { idleStep, IDLE_UTILIZATION, RELEASE_MIN_GROWTH_BYTES, type IdleState } from '../src/idle-memory';

const MB = 1024 * 1024;
const IDLE_MS = 10_000;
const start: IdleState = { idleForMs: 0, busySinceRelease: false, baselineRss: 140 * MB };
const busy = (rss: number) => ({ utilization: 0.9, intervalMs: 2_000, rss });
const idle = (rss: number) => ({ utilization: IDLE_UTILIZATION / 2, intervalMs: 2_000, rss });

/** Runs samples through the policy; returns the indexes of the samples that released memory. */
function run(samples: Array<ReturnType<typeof busy>>, state = start): { releases: number[]; state: IdleState } {
  const releases: number[] = [];
  samples.forEach((sample, i) => {
    const step = idleStep(state, sample, IDLE_MS);
    state = step.state;
    if (step.release) {
      releases.push(i);
      state = { ...state, baselineRss: 140 * MB };
    }
  });
  return { releases, state };
}

describe('idleStep (when a service gives memory back)', () => {
  it('releases once, after IDLE_MS of idle event loop following a busy period that grew the process', () => {
    const samples = [busy(300 * MB), busy(400 * MB), ...Array.from({ length: 10 }, () => idle(400 * MB))];
    // Idle samples 2..: 2 s each, so the fifth idle sample (index 6) completes 10 s.
    expect(run(samples).releases).toEqual([6]);
  });

  it('never releases a process that was never busy, however long it idles', () => {
    expect(run(Array.from({ length: 50 }, () => idle(400 * MB))).releases).toEqual([]);
  });

  it('does nothing while the process keeps working, even if a sample dips to idle', () => {
    const samples = Array.from({ length: 30 }, (_, i) => (i % 4 === 3 ? idle(400 * MB) : busy(400 * MB)));
    expect(run(samples).releases).toEqual([]);
  });

  it('leaves a process alone that has not grown by RELEASE_MIN_GROWTH_BYTES since its last release', () => {
    const small = 140 * MB + RELEASE_MIN_GROWTH_BYTES - 1;
    expect(run([busy(small), ...Array.from({ length: 10 }, () => idle(small))]).releases).toEqual([]);
    const enough = 140 * MB + RELEASE_MIN_GROWTH_BYTES;
    expect(run([busy(enough), ...Array.from({ length: 10 }, () => idle(enough))]).releases).toEqual([5]);
  });

  it('releases again only after another busy period', () => {
    const period = [busy(400 * MB), ...Array.from({ length: 8 }, () => idle(400 * MB))];
    expect(run([...period, ...period]).releases).toEqual([5, 14]);
  });

  it('counts utilization just above the threshold as work', () => {
    const step = idleStep({ ...start, idleForMs: 8_000, busySinceRelease: true }, { utilization: IDLE_UTILIZATION + 0.001, intervalMs: 2_000, rss: 400 * MB }, IDLE_MS);
    expect(step).toEqual({ state: { idleForMs: 0, busySinceRelease: true, baselineRss: 140 * MB }, release: false });
  });
});
