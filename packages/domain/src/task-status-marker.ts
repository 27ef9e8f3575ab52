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

// The event is published by the same script that moves the marker, so whoever misses the event
// (subscribed too late) is sure to see the terminal marker when it reads afterwards.
// A non-terminal status the marker already has is announced again: a reader may have seeded it
// (seedTaskStatus, from a row it read just after the commit) without announcing it, and event
// streams must hear it; they drop an event equal to the last one they sent.
const RECORD_MAX_SCRIPT = `
local current = redis.call('GET', KEYS[1])
if current and tonumber(current) > tonumber(ARGV[1]) then return 0 end
if current and tonumber(current) == tonumber(ARGV[1]) then
  if ARGV[5] == '1' then redis.call('PUBLISH', ARGV[3], ARGV[4]) end
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
redis.call('PUBLISH', ARGV[3], ARGV[4])
return 1`;

/** Parses a `TASK_FINISHED_CHANNEL` message; null when it is not one. */
export function parseTaskFinished(message: string): { accountId: string; publicId: string; status: number } | null {
  const [accountId, publicId, status] = message.split(' ');
  if (!accountId || !publicId || !status) return null;
  return { accountId, publicId, status: Number(status) };
}

/** The subset of an ioredis client used here. */
export interface MarkerRedis {
  eval(script: string, numKeys: number, ...args: Array<string | number>): Promise<unknown>;
  set(key: string, value: string | number, ex: 'EX', seconds: number, nx: 'NX'): Promise<unknown>;
}

/**
 * Records a committed status change. Call after the commit, before the change is announced. A
 * terminal status is published on TASK_FINISHED_CHANNEL when the marker moved; another on
 * TASK_CHANGED_CHANNEL (task event streams) when it moved or already had it.
 */
export async function recordTaskStatus(redis: MarkerRedis, accountId: string, publicId: string, status: number): Promise<void> {
  const terminal = isTerminalStatus(status);
  const ttl = terminal ? TERMINAL_TTL_SECONDS : NON_TERMINAL_TTL_SECONDS;
  const channel = terminal ? TASK_FINISHED_CHANNEL : TASK_CHANGED_CHANNEL;
  await redis.eval(RECORD_MAX_SCRIPT, 1, taskStatusMarkerKey(accountId, publicId), status, ttl, channel, `${accountId} ${publicId} ${status}`, terminal ? '0' : '1');
}

// A hand-back is the one move back (processing → queued, committed before): only from 10, so a
// terminal marker (a cancel racing it) is never undone; the running value of the progress goes too.
const RECORD_HAND_BACK_SCRIPT = `
if redis.call('GET', KEYS[1]) ~= '10' then return 0 end
redis.call('SET', KEYS[1], '0', 'EX', ARGV[1])
redis.call('DEL', KEYS[2])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1`;

/**
 * Records a committed hand-back (the task is queued again, no attempt spent: a worker shutting
 * down, a model server at capacity), so reads and event streams show it queued, not processing.
 */
export async function recordHandBack(redis: MarkerRedis, accountId: string, publicId: string): Promise<void> {
  await redis.eval(
    RECORD_HAND_BACK_SCRIPT,
    2,
    taskStatusMarkerKey(accountId, publicId),
    taskProgressKey(accountId, publicId),
    NON_TERMINAL_TTL_SECONDS,
    TASK_CHANGED_CHANNEL,
    `${accountId} ${publicId} 0`,
  );
}

/**
 * Sets the marker of a task read from PostgreSQL when Redis has none (e.g. after Redis lost its
 * data). NX: a writer's newer status always wins over a reader's.
 */
export async function seedTaskStatus(redis: MarkerRedis, accountId: string, publicId: string, status: number): Promise<void> {
  if (isTerminalStatus(status)) return;
  await redis.set(taskStatusMarkerKey(accountId, publicId), status, 'EX', NON_TERMINAL_TTL_SECONDS, 'NX');
}
