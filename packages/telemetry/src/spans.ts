import { context, isSpanContextValid, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Span } from '@opentelemetry/api';
import { getRPCMetadata, RPCType } from '@opentelemetry/core';
import { telemetryMode } from './start-telemetry';
import { childTraceParent, continuedTraceParent, parseTraceParent } from './trace-context';


/** The active span's W3C `traceparent` (`00-<trace id>-<span id>-<flags>`), or undefined when there is none (tracing off). */
export function activeTraceParent(ctx: Context = context.active()): string | undefined {
  const sc = trace.getSpanContext(ctx);
  if (!sc || !isSpanContextValid(sc)) return undefined;
  return `00-${sc.traceId}-${sc.spanId}-${sc.traceFlags.toString(16).padStart(2, '0')}`;
}

/** The active trace id (32 hex digits), or undefined when tracing is off. */
export function activeTraceId(ctx: Context = context.active()): string | undefined {
  const sc = trace.getSpanContext(ctx);
  return sc && isSpanContextValid(sc) ? sc.traceId : undefined;
}

/**
 * The active trace id when its span is recorded (a request the policy traces, or whose caller
 * sent a sampled `traceparent`), else undefined: an access line names only traces that exist.
 */
export function recordedTraceId(ctx: Context = context.active()): string | undefined {
  const span = trace.getSpan(ctx);
  return span?.isRecording() ? span.spanContext().traceId : undefined;
}

/**
 * Headers that carry the active trace on a request this process makes (a Cog prediction): without
 * the SDK, by hand — the active trace (the run's, which is the task's) with a new span id; with the
 * SDK, none, as the undici instrumentation adds the request span's own `traceparent`.
 */
export function handCarriedHeaders(): Record<string, string> {
  if (telemetryMode() !== 'propagate-only') return {};
  const traceParent = continuedTraceParent(activeTraceParent());
  return traceParent ? { traceparent: traceParent } : {};
}

/**
 * A context whose parent is the span a stored `traceparent` names (a remote parent), or the root
 * context when there is none or it is malformed.
 */
export function contextOf(traceParent: string | null | undefined): Context {
  const p = parseTraceParent(traceParent);
  if (!p) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, { traceId: p.traceId, spanId: p.parentId, traceFlags: parseInt(p.flags, 16) & 1, isRemote: true });
}

/** Options of `inSpan`. */
export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /** The parent context (default the active one). */
  parent?: Context;
}

const tracer = () => trace.getTracer('taskapi');

/**
 * Runs `fn` in a new span (ended when `fn` settles; an error thrown marks it failed). With tracing
 * off this is a plain call.
 */
export async function inSpan<T>(name: string, opts: SpanOptions, fn: (span: Span) => Promise<T>): Promise<T> {
  const parent = opts.parent ?? context.active();
  const span = tracer().startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes }, parent);
  try {
    return await context.with(trace.setSpan(parent, span), () => fn(span));
  } catch (err) {
    markFailed(span, err);
    throw err;
  } finally {
    span.end();
  }
}

/** Gives `span` an error status with what was thrown. */
function markFailed(span: Span, err: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
}

/** A span that was started, and the context with it as the active span. */
export interface StartedSpan {
  span: Span;
  context: Context;
  /** Its trace id, or undefined with tracing off. */
  traceId: string | undefined;
}

/** Starts a span without making it active: run what belongs in it with `withContext(started.context, …)`, then end it. */
export function startSpan(name: string, opts: SpanOptions): StartedSpan {
  const parent = opts.parent ?? context.active();
  const span = tracer().startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes }, parent);
  const ctx = trace.setSpan(parent, span);
  return { span, context: ctx, traceId: activeTraceId(ctx) };
}

/** A job about to be added to a queue, and the trace it belongs in: a context, or a stored `traceparent` (none: no trace). */
export interface SentJob {
  jobId: string;
  parent: Context | string | null | undefined;
}

/** Producer spans started by `startSendSpans`: run the sending in them, then end them. */
export interface SendSpans {
  /** False when no span was made (tracing not exporting, or no job in a trace): `end` does nothing. */
  readonly active: boolean;
  /** Runs `fn` in the lone job's span (what it makes, an opt-in Redis command span, is under it), else as it is. */
  run<T>(fn: () => T): T;
  /** Ends every span, failed when `error` is given (each job's span shares its one call's fate). */
  end(error?: unknown): void;
}

const NO_SEND_SPANS: SendSpans = { active: false, run: (fn) => fn(), end: () => undefined };

/**
 * Starts a producer span per job sent to a BullMQ queue in one call, `send <queue>` (kind
 * PRODUCER, `messaging.*` attributes), each a child of its job's `parent`: the task's trace,
 * never whatever trace the call is made in. A job whose parent is in no trace gets none. Without
 * the SDK exporting nothing is made, and `jobs` is not called (docs/architecture.md, "Tracing").
 * `startTime` (ms since the epoch): when the sending began, for a span made once it is known
 * that something was sent.
 */
export function startSendSpans(queue: string, jobs: () => readonly SentJob[], opts: { startTime?: number } = {}): SendSpans {
  if (telemetryMode() !== 'export') return NO_SEND_SPANS;
  const listed = jobs();
  const spans: Span[] = [];
  let only: Context | undefined;
  for (const job of listed) {
    const parent = typeof job.parent === 'object' && job.parent !== null ? job.parent : contextOf(job.parent);
    const sc = trace.getSpanContext(parent);
    if (!sc || !isSpanContextValid(sc)) continue;
    const span = tracer().startSpan(
      `send ${queue}`,
      {
        kind: SpanKind.PRODUCER,
        startTime: opts.startTime,
        attributes: { 'messaging.system': 'bullmq', 'messaging.operation.type': 'send', 'messaging.destination.name': queue, 'messaging.message.id': job.jobId },
      },
      parent,
    );
    spans.push(span);
    if (listed.length === 1) only = trace.setSpan(parent, span);
  }
  if (spans.length === 0) return NO_SEND_SPANS;
  return {
    active: true,
    run: (fn) => (only ? context.with(only, fn) : fn()),
    end(error) {
      for (const span of spans) {
        if (error !== undefined) markFailed(span, error);
        span.end();
      }
    },
  };
}

/** Runs `send` (one call that adds `jobs` to `queue`) in their producer spans (`startSendSpans`). */
export async function inSendSpans<T>(queue: string, jobs: () => readonly SentJob[], send: () => Promise<T>): Promise<T> {
  const spans = startSendSpans(queue, jobs);
  if (!spans.active) return send();
  try {
    const sent = await spans.run(send);
    spans.end();
    return sent;
  } catch (err) {
    spans.end(err);
    throw err;
  }
}

/** The active context (the trace a job added now belongs in, when it is its caller's). */
export function activeContext(): Context {
  return context.active();
}

/** Runs `fn` in `ctx` (a stored `traceparent`'s, say). */
export function withContext<T>(ctx: Context, fn: () => T): T {
  return context.with(ctx, fn);
}

/**
 * Names the HTTP server span of the current request after a route template of the registry
 * (`GET /api/tasks/{publicId}`) and sets its `http.route`, the label the metrics use too.
 */
export function nameServerSpan(method: string, template: string): void {
  const meta = getRPCMetadata(context.active());
  if (meta?.type !== RPCType.HTTP) return;
  meta.route = template;
  if (!meta.span.isRecording()) return;
  meta.span.setAttribute('http.route', template);
  meta.span.updateName(`${method} ${template}`);
}

/**
 * The `traceparent` a creation request stores with its task: with the SDK exporting, its HTTP
 * server span's (the active one); without the SDK (no endpoint), by hand: the incoming valid
 * `traceparent`'s trace with a new span id, else a new trace; with `OTEL_SDK_DISABLED`, none.
 */
export function creationTraceParent(incoming: string | string[] | undefined): string | undefined {
  const mode = telemetryMode();
  if (mode === 'export') return activeTraceParent();
  if (mode === 'disabled') return undefined;
  return childTraceParent(typeof incoming === 'string' ? incoming : undefined);
}

/**
 * The `traceparent` a request made in `started` sends: its span's when the SDK runs, else (by
 * hand) the task's stored trace with a new span id, or none when the task has no trace.
 */
export function outgoingTraceParent(started: StartedSpan, stored: string | null | undefined): string | undefined {
  return telemetryMode() === 'export' ? activeTraceParent(started.context) : continuedTraceParent(stored);
}

export { SpanKind, SpanStatusCode };
export type { Span };
