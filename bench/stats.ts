// The pure part of `npm run bench`: medians, percentiles and the closing `target …` lines.

/** Median of a non-empty list (the lower middle for an even count); NaN when empty. */
export function median(xs: readonly number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor((sorted.length - 1) / 2)] ?? NaN;
}

/** The p-th percentile (0–100, nearest rank) of an ascending list; NaN when empty. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))] as number;
}

export type Comparison = '>=' | '<' | '<=';

/** One goal of the table: a measured figure against a bound, in one unit. */
export interface Target {
  name: string;
  measured: number;
  comparison: Comparison;
  goal: number;
  /** Printed right after each number: `%`, ` ms`, ` MB`. */
  unit: string;
  /** Decimals of the measured figure (the goal is printed as given). */
  decimals?: number;
  /**
   * For a ratio: the figure it is made of, printed before it (`21.3 ms`), and what the ratio is of
   * (` the floor`, ` of the pipeline's`), printed after it; the goal then follows in brackets.
   */
  shown?: string;
  of?: string;
}

const SYMBOL: Record<Comparison, string> = { '>=': '≥', '<': '<', '<=': '≤' };

export function targetMet(t: Target): boolean {
  return t.comparison === '>=' ? t.measured >= t.goal : t.comparison === '<=' ? t.measured <= t.goal : t.measured < t.goal;
}

/**
 * `target <name>: <measured> <comparison> <goal> met` or `... MISSED`, e.g.
 * `target read-vs-express: 64.1% >= 70% MISSED`, or for a ratio with what it is made of,
 * `target pipeline-cpu-per-task: 21.3 ms = 2.4× the floor (goal ≤ 2×) MISSED`. A figure that
 * could not be measured (NaN) misses.
 */
export function formatTarget(t: Target): string {
  const measured = Number.isFinite(t.measured) ? `${t.measured.toFixed(t.decimals ?? 1)}${t.unit}` : 'n/a';
  const verdict = targetMet(t) ? 'met' : 'MISSED';
  if (t.shown !== undefined) return `target ${t.name}: ${t.shown} = ${measured}${t.of ?? ''} (goal ${SYMBOL[t.comparison]} ${t.goal}${t.unit}) ${verdict}`;
  return `target ${t.name}: ${measured} ${t.comparison} ${t.goal}${t.unit} ${verdict}`;
}

/**
 * A figure of the platform (ms) as a multiple of the floor's in the same run (goal: at most `goal`
 * times); both printed with `digits` decimals.
 */
export function floorTarget(name: string, value: number, floor: number, goal: number, digits = 1): Target {
  return { name, measured: value / floor, comparison: '<=', goal, unit: '×', decimals: 2, shown: `${value.toFixed(digits)} ms (the floor ${floor.toFixed(digits)} ms)`, of: ' the floor' };
}
