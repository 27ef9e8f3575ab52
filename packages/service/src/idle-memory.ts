import { performance, type EventLoopUtilization } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { Logger } from '@taskapi/logger';

// A Node process keeps the memory of its busiest moment. Under load V8 grows the young generation
// to its maximum (128 MB on a large machine) and the old generation to several times what is live,
// and after each full collection it keeps the freed pages in a pool for reuse: measured on the
// API after the bench's 50-connection runs, 45 MB live, 250 MB of heap and 90–210 MB of pooled
// pages, 400 MB resident, for as long as the process lives. V8's own memory reducer never runs
// in a Node service that goes quiet: it judges the allocation rate from samples taken at garbage
// collections, and a quiet process collects nothing, so the rate of the busy period stands
// ("high alloc" in --trace-memory-reducer). This module does what the memory reducer would: once
// the event loop has been idle for a while after being busy, and the process has grown since
// the last release, one memory-reducing collection (V8's "last resort": full collections that
// shrink every space and release the pool), at most once per busy period.

/** Event-loop utilization at or below which a sampling interval counts as idle. */
export const IDLE_UTILIZATION = 0.02;
/** Resident growth since the last release below which nothing is done. */
export const RELEASE_MIN_GROWTH_BYTES = 32 * 1024 * 1024;

export interface IdleState {
  /** Milliseconds the event loop has been idle without a break. */
  idleForMs: number;
  /** Some interval was busy since the last release (or since start). */
  busySinceRelease: boolean;
  /** Resident bytes right after the last release (or at start). */
  baselineRss: number;
}

/**
 * One sampling step: the next state, and whether to release memory now. Pure, so the policy is
 * tested without waiting: release when idle for `idleMs` after a busy interval, and only when the
 * process holds at least RELEASE_MIN_GROWTH_BYTES more than after the last release.
 */
export function idleStep(state: IdleState, sample: { utilization: number; intervalMs: number; rss: number }, idleMs: number): { state: IdleState; release: boolean } {
  if (sample.utilization > IDLE_UTILIZATION) return { state: { ...state, idleForMs: 0, busySinceRelease: true }, release: false };
  const idleForMs = state.idleForMs + sample.intervalMs;
  const release = state.busySinceRelease && idleForMs >= idleMs && sample.rss - state.baselineRss >= RELEASE_MIN_GROWTH_BYTES;
  return { state: { ...state, idleForMs, busySinceRelease: state.busySinceRelease && !release }, release };
}

type GcOptions = { type: 'major'; execution: 'sync'; flavor: 'last-resort' };
type GcFunction = (options?: GcOptions) => void;

/**
 * V8's `gc` function: the one `--expose-gc` puts on the global object, else one from a fresh
 * context created while the flag is set (the flag only adds `gc` to contexts created after it).
 * Undefined when this V8 gives none (its flags frozen): the release is then off.
 */
function gcFunction(): GcFunction | undefined {
  const exposed = (globalThis as { gc?: unknown }).gc;
  if (typeof exposed === 'function') return exposed as GcFunction;
  try {
    v8.setFlagsFromString('--expose-gc');
    const gc: unknown = vm.runInNewContext('gc');
    v8.setFlagsFromString('--no-expose-gc');
    return typeof gc === 'function' ? (gc as GcFunction) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The memory-reducing collection. The last-resort flavour (shrink every space, release the page
 * pool) is what gives memory back; it was measured on Node 24 (V8 13). Node 20's V8 takes the same
 * options but does next to nothing with them (a review measured 645 → 643 MB), so older V8s get
 * a plain full collection, which frees the heap but keeps the pool.
 */
function memoryReducingGc(gc: GcFunction): void {
  if (Number(process.versions.v8.split('.')[0]) >= 13) gc({ type: 'major', execution: 'sync', flavor: 'last-resort' });
  else gc();
}

export interface IdleMemoryRelease {
  stop(): void;
}

/**
 * Samples the event loop every `sampleMs` and releases memory as `idleStep` decides (`idleMs` 0:
 * never). Each release is logged (info) with the resident size before and after.
 */
export function releaseMemoryWhenIdle(opts: { idleMs: number; logger: Logger; sampleMs?: number }): IdleMemoryRelease {
  if (opts.idleMs <= 0) return { stop: () => undefined };
  const gc = gcFunction();
  if (!gc) {
    opts.logger.warn('idle memory release is off: this Node gives no gc function (MEMORY_RELEASE_IDLE_MS)');
    return { stop: () => undefined };
  }
  const sampleMs = opts.sampleMs ?? Math.min(2_000, opts.idleMs);
  let state: IdleState = { idleForMs: 0, busySinceRelease: false, baselineRss: process.memoryUsage.rss() };
  let last: EventLoopUtilization = performance.eventLoopUtilization();
  const timer = setInterval(() => {
    const now = performance.eventLoopUtilization();
    const { utilization } = performance.eventLoopUtilization(now, last);
    last = now;
    const rss = process.memoryUsage.rss();
    const step = idleStep(state, { utilization, intervalMs: sampleMs, rss }, opts.idleMs);
    state = step.state;
    if (!step.release) return;
    const started = performance.now();
    memoryReducingGc(gc);
    const after = process.memoryUsage.rss();
    state = { ...state, baselineRss: after };
    // The collection itself must not count as activity in the next sample.
    last = performance.eventLoopUtilization();
    const sizes = { rss_before_mb: Math.round(rss / 1048576), rss_after_mb: Math.round(after / 1048576), took_ms: Math.round(performance.now() - started) };
    // Said as a release only when one happened (an older V8 may keep its pages).
    if (rss - after >= 1048576) opts.logger.info('idle: memory released', sizes);
    else opts.logger.debug('idle: collected, nothing released', sizes);
  }, sampleMs).unref();
  return { stop: () => clearInterval(timer) };
}
