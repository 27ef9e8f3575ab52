// Redis, the second store a transition writes (docs/architecture.md, "A task's life"): each task's
// status marker, its progress while it runs, and the events announcing their changes. One script
// call each (src/commands), so a marker and its announcement never part: whoever misses an event
// (subscribed too late) is sure to see the new marker when it reads afterwards.
import path from 'node:path';
import type { Cluster, Redis } from 'ioredis';
import {
  isTerminalStatus,
  MARKER_TTL_SECONDS,
  PROGRESS_TTL_SECONDS,
  TASK_CHANGED_CHANNEL,
  TASK_FINISHED_CHANNEL,
  taskProgressKey,
  taskStatusMarkerKey,
} from '@taskapi/domain';
import { commandsFolder, LuaScripts } from '@taskapi/redis-scripts';

const scripts = new LuaScripts(commandsFolder(path.join(__dirname, '../commands'), 'task-lifecycle'), 'taskapi_lifecycle');

interface TaskRef {
  accountId: string;
  publicId: string;
}

const recordStatus = scripts.define({
  command: 'record-status',
  keys: (i: TaskRef & { status: number }) => [taskStatusMarkerKey(i.accountId, i.publicId)],
  args: ({ accountId, publicId, status }) => {
    const terminal = isTerminalStatus(status);
    // A terminal status goes to TASK_FINISHED_CHANNEL when the marker moved; the others to
    // TASK_CHANGED_CHANNEL (task event streams) when it moved or already had it.
    return [
      status,
      terminal ? MARKER_TTL_SECONDS.terminal : MARKER_TTL_SECONDS.nonTerminal,
      terminal ? TASK_FINISHED_CHANNEL : TASK_CHANGED_CHANNEL,
      `${accountId} ${publicId} ${status}`,
      terminal ? '0' : '1',
    ];
  },
  reply: (raw) => raw === 1,
});

const recordHandBack = scripts.define({
  command: 'record-hand-back',
  keys: (i: TaskRef) => [taskStatusMarkerKey(i.accountId, i.publicId), taskProgressKey(i.accountId, i.publicId)],
  args: ({ accountId, publicId }) => [MARKER_TTL_SECONDS.nonTerminal, TASK_CHANGED_CHANNEL, `${accountId} ${publicId} 0`],
  reply: (raw) => raw === 1,
});

const recordProgress = scripts.define({
  command: 'record-progress',
  keys: (i: TaskRef & { progress: number }) => [taskProgressKey(i.accountId, i.publicId)],
  args: (i) => [String(i.progress), PROGRESS_TTL_SECONDS, TASK_CHANGED_CHANNEL, `${i.accountId} ${i.publicId}`],
  reply: () => undefined,
});

/** Markers, progress and task events on one Redis client (or a test's failing stand-in). */
export class StatusMarkers {
  constructor(readonly redis: Redis | Cluster) {}

  /**
   * A committed status change: the marker keeps the highest status it was given (statuses only
   * move forward), and the change is announced. Returns whether the marker moved.
   */
  status(accountId: string, publicId: string, status: number): Promise<boolean> {
    return recordStatus(this.redis, { accountId, publicId, status });
  }

  /**
   * A committed hand-back (queued again, no attempt spent): the marker moves back from 10 to 0
   * (never from a terminal one), the running progress goes, and the change is announced.
   */
  handBack(accountId: string, publicId: string): Promise<boolean> {
    return recordHandBack(this.redis, { accountId, publicId });
  }

  /** A running task's progress (already rounded), announced. */
  progress(accountId: string, publicId: string, progress: number): Promise<void> {
    return recordProgress(this.redis, { accountId, publicId, progress });
  }

  /** The progress a running task has reached (its key), as stored; null when none. */
  storedProgress(accountId: string, publicId: string): Promise<string | null> {
    return this.redis.get(taskProgressKey(accountId, publicId));
  }

  /**
   * The marker of a task read from PostgreSQL when Redis has none (e.g. after Redis lost its
   * data). NX: a writer's newer status always wins over a reader's.
   */
  async seed(accountId: string, publicId: string, status: number): Promise<void> {
    if (isTerminalStatus(status)) return;
    await this.redis.set(taskStatusMarkerKey(accountId, publicId), status, 'EX', MARKER_TTL_SECONDS.nonTerminal, 'NX');
  }
}
