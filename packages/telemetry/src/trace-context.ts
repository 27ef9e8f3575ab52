import { randomBytes } from 'node:crypto';

/**
 * W3C Trace Context by hand (https://www.w3.org/TR/trace-context/): what a service does with a
 * task's `traceparent` when the OpenTelemetry SDK is not running (no exporter endpoint). Pure
 * functions on strings; no span is recorded.
 */

/**
 * Version 00, a 32-lower-hex trace id and a 16-lower-hex parent id (neither all zeros), 2-hex flags.
 * Anything else is not a `traceparent` this code continues.
 */
const TRACEPARENT = /^00-(?!0{32})([0-9a-f]{32})-(?!0{16})([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The parts of a valid `traceparent`. */
export interface TraceParent {
  traceId: string;
  parentId: string;
  flags: string;
}

/** The parts of `value` when it is a valid version-00 `traceparent`, else undefined. */
export function parseTraceParent(value: string | null | undefined): TraceParent | undefined {
  const m = value ? TRACEPARENT.exec(value) : null;
  return m ? { traceId: m[1] as string, parentId: m[2] as string, flags: m[3] as string } : undefined;
}

/** The trace id of a valid `traceparent`, else undefined. */
export function traceIdOf(traceParent: string | null | undefined): string | undefined {
  return parseTraceParent(traceParent)?.traceId;
}

/** `bytes` random bytes in lower hex, never all zeros (an invalid id). */
function randomId(bytes: number): string {
  for (;;) {
    const id = randomBytes(bytes).toString('hex');
    if (!/^0+$/.test(id)) return id;
  }
}

/** A new random trace id (32 lower hex). */
export const newTraceId = (): string => randomId(16);

/** A new random span id (16 lower hex). */
export const newSpanId = (): string => randomId(8);

/**
 * A `traceparent` for a new span under `parent`: the parent's trace id and flags with a new span
 * id (the caller's sampling decision is kept); when `parent` is missing or not a valid
 * `traceparent`, a new trace, sampled (flags 01): a task is traced by default, so a worker or
 * dispatcher that exports records it although the API that created it does not export.
 */
export function childTraceParent(parent: string | null | undefined): string {
  const p = parseTraceParent(parent);
  return `00-${p?.traceId ?? newTraceId()}-${newSpanId()}-${p?.flags ?? '01'}`;
}

/**
 * A `traceparent` that continues `parent` only: a new span id in its trace, or undefined when
 * `parent` is missing or invalid (no trace to continue).
 */
export function continuedTraceParent(parent: string | null | undefined): string | undefined {
  const p = parseTraceParent(parent);
  return p ? `00-${p.traceId}-${newSpanId()}-${p.flags}` : undefined;
}
