// A prediction's custom metrics as coglet merges them (Prediction::set_metric in
// crates/coglet/src/prediction.rs): `replace` (null deletes), `increment` (numbers only, from 0),
// `append` (wrapping a value that is not a list yet); `a.b.c` names nest objects.
import type { MetricMode } from './model';

type Metrics = Record<string, unknown>;

function isObject(value: unknown): value is Metrics {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function merge(parent: Metrics, key: string, value: unknown, mode: MetricMode): void {
  if (mode === 'replace') {
    if (value === null) delete parent[key];
    else parent[key] = value;
    return;
  }
  if (mode === 'increment') {
    const current = Object.hasOwn(parent, key) ? parent[key] : (parent[key] = 0);
    // A value that is not a number is ignored (coglet drops it silently too).
    if (typeof current === 'number' && typeof value === 'number') parent[key] = current + value;
    return;
  }
  const current = Object.hasOwn(parent, key) ? parent[key] : [];
  parent[key] = Array.isArray(current) ? [...(current as unknown[]), value] : [current, value];
}

/** True when `name` is one coglet accepts: not empty, no empty `.` segment. */
export function validMetricName(name: string): boolean {
  return name !== '' && name.split('.').every((part) => part !== '');
}

/** Merges one metric into `metrics` (in place). */
export function applyMetric(metrics: Metrics, name: string, value: unknown, mode: MetricMode): void {
  const parts = name.split('.');
  const leaf = parts.pop() as string;
  let parent = metrics;
  for (const part of parts) {
    if (!isObject(parent[part])) parent[part] = {};
    parent = parent[part] as Metrics;
  }
  merge(parent, leaf, value, mode);
}
