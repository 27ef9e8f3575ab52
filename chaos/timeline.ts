// The chaos schedule: which event happens when, drawn from the seed, and the monkey that carries
// it out against the running stack, recording when each event started and when the victim was
// back (a service logged ready again, Redis answered PING, PostgreSQL accepted connections; after a
// failover, the new primary took a write). After a failover it also measures when full service
// returned: a probe task created after the new primary took writes was answered 201, run, and its
// webhook accepted (docs/high-availability.md: the goal is 10 s).
import { setTimeout as delay } from 'node:timers/promises';
import type { PostgresPair, PostgresStopMode, RedisSentinelGroup } from '@taskapi/testing';
import { FAILOVERS, type ChaosKind, type ChaosOptions } from './options';
import type { Random } from './random';
import type { SupervisedService } from './supervisor';

type StopMode = PostgresStopMode;

export interface PlannedEvent {
  /** Milliseconds after the start of the window. */
  atMs: number;
  kind: ChaosKind;
  /** How long the victim stays down before it is started again. */
  pauseMs: number;
  /** PostgreSQL only: `immediate` is a crash (WAL recovery on start), `fast` a clean stop. */
  stopMode?: StopMode;
}

export interface ChaosEvent extends PlannedEvent {
  /** Milliseconds after the start of the window, as it happened. */
  startedMs: number;
  recoveredMs?: number;
  /** Failovers: when the new primary took its first write (ms after the start of the window). */
  writableMs?: number;
  /** Failovers: when full service was back (the probe's webhook accepted), ms after the start of the window. */
  fullServiceMs?: number;
  detail: string;
  error?: string;
}

/** After a failover: full service is back within this long of the new primary taking writes (reported, not enforced). */
export const FULL_SERVICE_GOAL_MS = 10_000;

export interface ChaosTargets {
  api: SupervisedService;
  worker: SupervisedService;
  dispatcher: SupervisedService;
  redis: RedisSentinelGroup;
  postgres: PostgresPair;
  /** Creates a task with a callback, retrying until answered 201; resolves when its webhook was accepted (ms since the epoch). */
  probe: () => Promise<number>;
}

const FIRST_EVENT_MS = 3_000;

export function planTimeline(opts: Pick<ChaosOptions, 'windowMs' | 'events'>, random: Random): PlannedEvent[] {
  const kinds = random.shuffle(Object.entries(opts.events).flatMap(([kind, n]) => Array<ChaosKind>(n).fill(kind as ChaosKind)));
  const slot = (opts.windowMs - FIRST_EVENT_MS - 2_000) / kinds.length;
  const stops: Partial<Record<ChaosKind, number>> = {};
  return kinds.map((kind, i) => {
    const atMs = Math.round(FIRST_EVENT_MS + i * slot + random.next() * slot * 0.5);
    if (kind === 'postgres-restart' || kind === 'postgres-switch') {
      const n = (stops[kind] = (stops[kind] ?? 0) + 1);
      const stopMode: StopMode = n % 2 === 1 ? 'immediate' : 'fast';
      return { atMs, kind, pauseMs: kind === 'postgres-switch' ? 0 : random.int(500, 2_500), stopMode };
    }
    if (kind === 'redis-failover') return { atMs, kind, pauseMs: 0 }; // the old primary rejoins as a replica at once
    return { atMs, kind, pauseMs: kind === 'redis-restart' ? random.int(500, 2_000) : random.int(300, 1_500) };
  });
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1).padStart(5)} s`;

export function describeEvent(e: ChaosEvent): string {
  const back = e.recoveredMs === undefined ? 'not back' : `back at ${seconds(e.recoveredMs)} (${((e.recoveredMs - e.startedMs) / 1000).toFixed(1)} s)`;
  const service =
    e.writableMs === undefined
      ? ''
      : e.fullServiceMs === undefined
        ? '; full service never came back'
        : `; full service ${((e.fullServiceMs - e.writableMs) / 1000).toFixed(1)} s after the new primary took writes (goal ${FULL_SERVICE_GOAL_MS / 1000} s)`;
  return `${seconds(e.startedMs)}  ${e.kind.padEnd(17)} ${e.detail.padEnd(40)} ${back}${service}${e.error ? `  ERROR: ${e.error}` : ''}`;
}

/**
 * Carries out one event; a failover's `writableAt` is when the new primary took its first write (ms
 * since the epoch), and `then` what still follows it (the old node rebuilt as a standby).
 */
async function strike(e: PlannedEvent, t: ChaosTargets): Promise<{ detail: string; writableAt?: number; then?: Promise<void> }> {
  switch (e.kind) {
    case 'kill-worker':
    case 'kill-dispatcher':
    case 'kill-api': {
      const victim = e.kind === 'kill-worker' ? t.worker : e.kind === 'kill-dispatcher' ? t.dispatcher : t.api;
      const pid = await victim.kill9(e.pauseMs);
      return { detail: `kill -9 ${victim.name} pid ${pid}, restart after ${e.pauseMs} ms` };
    }
    case 'redis-restart':
      await t.redis.restartEmpty(e.pauseMs);
      return { detail: `primary and replica kill -9, ${e.pauseMs} ms down, restarted empty` };
    case 'redis-failover': {
      const { oldPrimary, newPrimary, writableAt } = await t.redis.failover({ rejoinAfterMs: e.pauseMs });
      return { detail: `primary :${oldPrimary} kill -9, Sentinels promoted :${newPrimary}`, writableAt };
    }
    case 'postgres-restart':
      await t.postgres.restartPrimary(e.stopMode ?? 'immediate', e.pauseMs);
      return { detail: `primary pg_ctl stop -m ${e.stopMode}, ${e.pauseMs} ms down, started` };
    case 'postgres-switch': {
      const { writableAt, rebuilt } = await t.postgres.switchover({ stopMode: e.stopMode ?? 'immediate' });
      // The next switch needs a standby: the old primary is rebuilt from the new one before the next event.
      return { detail: `primary pg_ctl stop -m ${e.stopMode}, standby promoted, node${t.postgres.primary()} primary`, writableAt, then: rebuilt };
    }
  }
}

/** Carries out the plan in order (an event starts no earlier than planned, and after the previous one recovered). */
export async function runTimeline(plan: PlannedEvent[], targets: ChaosTargets, windowStart: number, onEvent: (e: ChaosEvent) => void, stopped: () => boolean): Promise<ChaosEvent[]> {
  const done: ChaosEvent[] = [];
  for (const planned of plan) {
    const wait = windowStart + planned.atMs - Date.now();
    if (wait > 0) await delay(wait);
    if (stopped()) break;
    const startedMs = Date.now() - windowStart;
    const event: ChaosEvent = { ...planned, startedMs, detail: '' };
    try {
      const struck = await strike(planned, targets);
      event.detail = struck.detail;
      event.recoveredMs = Date.now() - windowStart;
      if (FAILOVERS.has(planned.kind) && struck.writableAt !== undefined) {
        event.writableMs = struck.writableAt - windowStart;
        const [served] = await Promise.all([targets.probe().catch(() => undefined), struck.then]);
        if (served !== undefined) event.fullServiceMs = served - windowStart;
      }
    } catch (err) {
      event.detail = planned.kind;
      event.error = (err as Error).message;
    }
    done.push(event);
    onEvent(event);
  }
  return done;
}
