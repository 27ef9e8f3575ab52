import { floorTarget, formatTarget, median, percentile } from './stats';

describe('bench statistics', () => {
  it('takes the median of the rounds (the lower middle for an even count)', () => {
    expect(median([3, 1, 2])).toBe(2);
    expect(median([4, 1, 3, 2])).toBe(2);
    expect(median([])).toBeNaN();
  });

  it('takes nearest-rank percentiles of an ascending list', () => {
    const xs = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(xs, 50)).toBe(50);
    expect(percentile(xs, 99)).toBe(99);
    expect(percentile(xs, 100)).toBe(100);
    expect(percentile([7], 50)).toBe(7);
    expect(percentile([], 50)).toBeNaN();
  });

  it('prints one line per target in the issue’s exact form', () => {
    expect(formatTarget({ name: 'read-vs-express', measured: 64.06, comparison: '>=', goal: 70, unit: '%' })).toBe('target read-vs-express: 64.1% >= 70% MISSED');
    expect(formatTarget({ name: 'create-p99', measured: 42.04, comparison: '<', goal: 60, unit: ' ms' })).toBe('target create-p99: 42.0 ms < 60 ms met');
    expect(formatTarget({ name: 'api-rss', measured: 150.24, comparison: '<', goal: 150, unit: ' MB' })).toBe('target api-rss: 150.2 MB < 150 MB MISSED');
    expect(formatTarget({ name: 'dispatcher-vs-raw', measured: NaN, comparison: '>=', goal: 70, unit: '%' })).toBe('target dispatcher-vs-raw: n/a >= 70% MISSED');
  });

  it('prints a ratio with the figures it is made of', () => {
    expect(formatTarget(floorTarget('pipeline-cpu-per-task', 21.3, 8.9, 2))).toBe('target pipeline-cpu-per-task: 21.3 ms (the floor 8.9 ms) = 2.39× the floor (goal ≤ 2×) MISSED');
    expect(formatTarget(floorTarget('webhook-light-p50', 24.1, 9.8, 3))).toBe('target webhook-light-p50: 24.1 ms (the floor 9.8 ms) = 2.46× the floor (goal ≤ 3×) met');
    expect(formatTarget({ name: 'fairness-cpu-per-task', measured: 3.2, comparison: '<=', goal: 5, unit: ' %', shown: '0.41 ms', of: " of the pipeline's" })).toBe(
      "target fairness-cpu-per-task: 0.41 ms = 3.2 % of the pipeline's (goal ≤ 5 %) met",
    );
  });
});
