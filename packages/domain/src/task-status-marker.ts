import type { Cluster, Redis } from 'ioredis';
import { domainScripts } from './domain-scripts';
import { TASK_CHANGED_CHANNEL, taskProgressKey } from './task-progress';
import { isTerminalStatus } from './task-rules';

// Every committed status change of a task is mirrored to a small Redis key, written *after* the
// commit and *before* anything else observes the change (the API's response, the webhook job).
// API replicas cache task rows in memory and check this marker on every read, inside the same
// rate-limit script round trip, so a cached row is served only while its status is still current.
//
// Statuses only move forward (0 → 10 → 20/30/40), so the marker keeps the highest status it was
// given: late or reordered writers can never move it back.

/** The marker shares the account's hash tag with the rate-limit keys (one Redis Cluster slot). */
export function taskStatusMarkerKey(accountId: string, publicId: string): string {
  return `taskapi:task:{${accountId}}:${publicId}:status`;
}

// Long enough for any in-flight writer; readers treat a missing marker as "unknown" and go to
// PostgreSQL, so expiry only costs a database read.
const NON_TERMINAL_TTL_SECONDS = 24 * 3600;
const TERMINAL_TTL_SECONDS = 3600;

/**
 * Pub/sub channel on which a task's move to a terminal status is announced (message:
 * `accountId publicId status`), for API replicas holding `Prefer: wait` requests. One global
 * channel: classic PUBLISH reaches every node's subscribers on Redis Cluster too.
 */
export const TASK_FINISHED_CHANNEL = 'taskapi:task-finished';

/** Parses a `TASK_FINISHED_CHANNEL` message; null when it is not one. */
export function parseTaskFinished(message: string): { accountId: string; publicId: string; status: number } | null {
  const [accountId, publicId, status] = message.split(' ');
  if (!accountId || !publicId || !status) return null;
  return { accountId, publicId, status: Number(status) };
}

/** The Redis clients markers live on. */
export type MarkerRedis = Redis | Cluster;

const recordStatusScript = domainScripts.define({
  command: 'record-status',
  keys: (i: { accountId: string; publicId: string; status: number }) => [taskStatusMarkerKey(i.accountId, i.publicId)],
  args: ({ accountId, publicId, status }) => {
    const terminal = isTerminalStatus(status);
    // A terminal status goes to TASK_FINISHED_CHANNEL when the marker moved; the others to
    // TASK_CHANGED_CHANNEL (task event streams) when it moved or already had it.
    return [status, terminal ? TERMINAL_TTL_SECONDS : NON_TERMINAL_TTL_SECONDS, terminal ? TASK_FINISHED_CHANNEL : TASK_CHANGED_CHANNEL, `${accountId} ${publicId} ${status}`, terminal ? '0' : '1'];
  },
  reply: (raw) => raw === 1,
});

const recordHandBackScript = domainScripts.define({
  command: 'record-hand-back',
  keys: (i: { accountId: string; publicId: string }) => [taskStatusMarkerKey(i.accountId, i.publicId), taskProgressKey(i.accountId, i.publicId)],
  args: ({ accountId, publicId }) => [NON_TERMINAL_TTL_SECONDS, TASK_CHANGED_CHANNEL, `${accountId} ${publicId} 0`],
  reply: (raw) => raw === 1,
});

/**
 * Records a committed status change. Call after the commit, before the change is announced. A
 * terminal status is published on TASK_FINISHED_CHANNEL when the marker moved; another on
 * TASK_CHANGED_CHANNEL (task event streams) when it moved or already had it.
 */
export async function recordTaskStatus(redis: MarkerRedis, accountId: string, publicId: string, status: number): Promise<void> {
  await recordStatusScript(redis, { accountId, publicId, status });
}

/**
 * Records a committed hand-back (the task is queued again, no attempt spent: a worker shutting
 * down, a model server at capacity), so reads and event streams show it queued, not processing.
 */
export async function recordHandBack(redis: MarkerRedis, accountId: string, publicId: string): Promise<void> {
  await recordHandBackScript(redis, { accountId, publicId });
}

/**
 * Sets the marker of a task read from PostgreSQL when Redis has none (e.g. after Redis lost its
 * data). NX: a writer's newer status always wins over a reader's.
 */
export async function seedTaskStatus(redis: MarkerRedis, accountId: string, publicId: string, status: number): Promise<void> {
  if (isTerminalStatus(status)) return;
  await redis.set(taskStatusMarkerKey(accountId, publicId), status, 'EX', NON_TERMINAL_TTL_SECONDS, 'NX');
}
