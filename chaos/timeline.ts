// The chaos schedule: which event happens when, drawn from the seed, and the monkey that carries
// it out against the running stack, recording when each event started and when the victim was
// back (a service logged ready again, Redis answered PING, PostgreSQL accepted connections).
import { setTimeout as delay } from 'node:timers/promises';
import type { ChaosKind, ChaosOptions } from './options';
import type { PrivatePostgres, StopMode } from './private-postgres';
import type { PrivateRedis } from './private-redis';
import type { Random } from './random';
import type { SupervisedService } from './supervisor';

export interface PlannedEvent {
  /** Milliseconds after the start of the window. */
  atMs: number;
  kind: ChaosKind;
  /** How long the victim stays down before it is started again. */
  pauseMs: number;
  /** PostgreSQL only: `immediate` is a crash (WAL recovery on start), `fast` a clean restart. */
  stopMode?: StopMode;
}

export interface ChaosEvent extends PlannedEvent {
  /** Milliseconds after the start of the window, as it happened. */
  startedMs: number;
  recoveredMs?: number;
  detail: string;
  error?: string;
}

export interface ChaosTargets {
  api: SupervisedService;
  worker: SupervisedService;
  dispatcher: SupervisedService;
  redis: PrivateRedis;
  postgres: PrivatePostgres;
}

const FIRST_EVENT_MS = 3_000;

export function planTimeline(opts: Pick<ChaosOptions, 'windowMs' | 'events'>, random: Random): PlannedEvent[] {
  const kinds = random.shuffle(Object.entries(opts.events).flatMap(([kind, n]) => Array<ChaosKind>(n).fill(kind as ChaosKind)));
  const slot = (opts.windowMs - FIRST_EVENT_MS - 2_000) / kinds.length;
  let postgresRestarts = 0;
  return kinds.map((kind, i) => {
    const atMs = Math.round(FIRST_EVENT_MS + i * slot + random.next() * slot * 0.5);
    if (kind === 'postgres-restart') {
      const stopMode: StopMode = postgresRestarts++ % 2 === 0 ? 'immediate' : 'fast';
      return { atMs, kind, pauseMs: random.int(500, 2_500), stopMode };
    }
    return { atMs, kind, pauseMs: kind === 'redis-restart' ? random.int(500, 2_000) : random.int(300, 1_500) };
  });
}

const seconds = (ms: number) => `${(ms / 1000).toFixed(1).padStart(5)} s`;

export function describeEvent(e: ChaosEvent): string {
  const back = e.recoveredMs === undefined ? 'not back' : `back at ${seconds(e.recoveredMs)} (${((e.recoveredMs - e.startedMs) / 1000).toFixed(1)} s)`;
  return `${seconds(e.startedMs)}  ${e.kind.padEnd(17)} ${e.detail.padEnd(40)} ${back}${e.error ? `  ERROR: ${e.error}` : ''}`;
}

async function strike(e: PlannedEvent, t: ChaosTargets): Promise<string> {
  switch (e.kind) {
    case 'kill-worker':
    case 'kill-dispatcher':
    case 'kill-api': {
      const victim = e.kind === 'kill-worker' ? t.worker : e.kind === 'kill-dispatcher' ? t.dispatcher : t.api;
      const pid = await victim.kill9(e.pauseMs);
      return `kill -9 ${victim.name} pid ${pid}, restart after ${e.pauseMs} ms`;
    }
    case 'redis-restart':
      await t.redis.restartEmpty(e.pauseMs);
      return `kill -9, ${e.pauseMs} ms down, restarted empty`;
    case 'postgres-restart':
      await t.postgres.restart(e.stopMode ?? 'immediate', e.pauseMs);
      return `pg_ctl stop -m ${e.stopMode}, ${e.pauseMs} ms down, started`;
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
      event.detail = await strike(planned, targets);
      event.recoveredMs = Date.now() - windowStart;
    } catch (err) {
      event.detail = planned.kind;
      event.error = (err as Error).message;
    }
    done.push(event);
    onEvent(event);
  }
  return done;
}
