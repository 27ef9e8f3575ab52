// The retry schedule: which attempt gets a retry and after how long, and what each result makes of
// the delivery. Pure rules; the default schedule is read from the configuration as deployed.
import { testConfig } from '@taskapi/testing';
import { retryDelayAfter, retryDueInMs, stateAfterAttempt } from '../src/domain/retry-schedule';

const MIN = 60_000;
const HOUR = 60 * MIN;
const DELAYS = [1_000, 5_000, 30_000];

describe('retryDelayAfter', () => {
  it('by default: 1 min, 5 min, 30 min, 2 h, 6 h after attempts 1 to 5, then nothing (six attempts in all)', () => {
    const delays = testConfig().webhookRetryDelaysMs;
    expect([1, 2, 3, 4, 5, 6].map((attempt) => retryDelayAfter(attempt, delays))).toEqual([MIN, 5 * MIN, 30 * MIN, 2 * HOUR, 6 * HOUR, null]);
  });

  it('follows a configured schedule: one retry per delay', () => {
    expect([1, 2, 3, 4].map((attempt) => retryDelayAfter(attempt, DELAYS))).toEqual([1_000, 5_000, 30_000, null]);
  });

  it('gives no automatic retry past the schedule (manual resends) or to a number that is not an attempt', () => {
    expect(retryDelayAfter(7, DELAYS)).toBeNull();
    expect(retryDelayAfter(0, DELAYS)).toBeNull();
    expect(retryDelayAfter(-1, DELAYS)).toBeNull();
  });

  it('with an empty schedule, the first attempt is the only one', () => {
    expect(retryDelayAfter(1, [])).toBeNull();
  });
});

describe('stateAfterAttempt', () => {
  it('a delivered attempt ends the delivery, whichever number it was', () => {
    for (const attempt of [1, 3, 4, 9]) expect(stateAfterAttempt(attempt, null, DELAYS)).toEqual({ state: 'succeeded', retryDelayMs: null });
  });

  it('a failed attempt within the schedule leaves the delivery pending, the next attempt due after its delay', () => {
    expect(stateAfterAttempt(1, 'HTTP 503', DELAYS)).toEqual({ state: 'pending', retryDelayMs: 1_000 });
    expect(stateAfterAttempt(3, 'connection refused', DELAYS)).toEqual({ state: 'pending', retryDelayMs: 30_000 });
  });

  it('the last scheduled attempt failing gives the delivery up; so does a failed manual resend past the schedule', () => {
    expect(stateAfterAttempt(4, 'HTTP 500', DELAYS)).toEqual({ state: 'failed', retryDelayMs: null });
    expect(stateAfterAttempt(6, 'HTTP 500', DELAYS)).toEqual({ state: 'failed', retryDelayMs: null });
  });
});

describe('retryDueInMs', () => {
  const finishedAt = Date.parse('2026-01-02T03:04:05.000Z');

  it('measures the retry from the attempt, not from when its result is recorded', () => {
    expect(retryDueInMs(30_000, finishedAt, finishedAt)).toBe(30_000);
    // Recorded 12 s late (PostgreSQL was unreachable): the retry is still due 30 s after the attempt.
    expect(retryDueInMs(30_000, finishedAt, finishedAt + 12_000)).toBe(18_000);
  });

  it('is due at once when the recording came later than the delay', () => {
    expect(retryDueInMs(30_000, finishedAt, finishedAt + 30_000)).toBe(0);
    expect(retryDueInMs(30_000, finishedAt, finishedAt + HOUR)).toBe(0);
  });
});
