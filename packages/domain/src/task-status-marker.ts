
// Every committed status change of a task is mirrored to a small Redis key, written *after* the
// commit and *before* anything else observes the change (the API's response, the webhook job) by
// the task's lifecycle (@taskapi/task-lifecycle, the only writer). API replicas cache task rows in
// memory and check this marker on every read, inside the same rate-limit script round trip, so a
// cached row is served only while its status is still current. Here: where the marker is, and the
// channels its changes are announced on.

/** The marker shares the account's hash tag with the rate-limit keys (one Redis Cluster slot). */
export function taskStatusMarkerKey(accountId: string, publicId: string): string {
  return `taskapi:task:{${accountId}}:${publicId}:status`;
}

/**
 * How long a marker lives: long enough for any in-flight writer; readers treat a missing marker as
 * "unknown" and go to PostgreSQL, so expiry only costs a database read.
 */
export const MARKER_TTL_SECONDS = { nonTerminal: 24 * 3600, terminal: 3600 } as const;

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
