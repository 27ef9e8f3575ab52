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
}

export function targetMet(t: Target): boolean {
  return t.comparison === '>=' ? t.measured >= t.goal : t.comparison === '<=' ? t.measured <= t.goal : t.measured < t.goal;
}

/**
 * `target <name>: <measured> <comparison> <goal> met` or `... MISSED`, e.g.
 * `target read-vs-express: 64.1% >= 70% MISSED`. A figure that could not be measured (NaN) misses.
 */
export function formatTarget(t: Target): string {
  const measured = Number.isFinite(t.measured) ? `${t.measured.toFixed(t.decimals ?? 1)}${t.unit}` : 'n/a';
  return `target ${t.name}: ${measured} ${t.comparison} ${t.goal}${t.unit} ${targetMet(t) ? 'met' : 'MISSED'}`;
}
