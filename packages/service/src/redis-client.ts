import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { Config } from '@taskapi/config';

/**
 * A connection to the configured Redis: one node (`REDIS_URL`), the primary that Sentinels name
 * (`REDIS_SENTINELS`), or a cluster (`REDIS_CLUSTER_NODES`).
 */
export type RedisClient = Redis | Cluster;

/** Where Redis is: the settings that choose between a single node, Sentinels and a cluster. */
export type RedisTarget = Pick<Config, 'redisUrl' | 'redisClusterNodes'> & Partial<Pick<Config, 'redisSentinels' | 'redisSentinelName' | 'redisSentinelPassword'>>;

/**
 * A write sent to a primary that has just been demoted (a Sentinel or managed failover) is refused
 * with READONLY (inside a script too: `ERR … -READONLY …`) and not carried out: reconnect, which
 * finds the new primary. The command itself fails (not resent: inside a MULTI a lone resend would
 * run outside the transaction); its caller retries it like any other lost connection.
 */
const retryOnReadonly = (err: Error): boolean => /\bREADONLY\b/.test(err.message);

/**
 * The one place a Redis connection is made. With `redisClusterNodes`, a cluster client whose nodes
 * get `options` plus the user, password and TLS of `redisUrl` (its database number is ignored: a
 * cluster has only database 0). Keys a script or MULTI touches together must share a hash tag.
 */
export function createRedisClient(target: RedisTarget, options: RedisOptions = {}): RedisClient {
  if (target.redisSentinels && target.redisSentinelName) return sentinelClient(target, options);
  if (!target.redisClusterNodes) return new Redis(target.redisUrl, { reconnectOnError: retryOnReadonly, ...options });
  const url = new URL(target.redisUrl);
  const { enableOfflineQueue, enableAutoPipelining, retryStrategy, lazyConnect, ...nodeOptions } = options;
  const clusterOptions: ClusterOptions = {
    redisOptions: {
      ...nodeOptions,
      ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
      ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
      ...(url.protocol === 'rediss:' ? { tls: {} } : {}),
    },
    ...(enableOfflineQueue === undefined ? {} : { enableOfflineQueue }),
    ...(enableAutoPipelining === undefined ? {} : { enableAutoPipelining }),
    ...(lazyConnect === undefined ? {} : { lazyConnect }),
    // The same back-off as a single node's reconnects (ioredis's cluster default is 100 ms × tries).
    ...(retryStrategy ? { clusterRetryStrategy: (times: number) => retryStrategy(times) } : {}),
  };
  return new Cluster(
    target.redisClusterNodes.map((n) => ({ host: n.host, port: n.port })),
    clusterOptions,
  );
}

/**
 * The primary the Sentinels name, with `REDIS_URL`'s user, password, database number and TLS. ioredis
 * asks the Sentinels in turn for the primary's address, checks with ROLE that it is one, and asks
 * again whenever the connection drops (a failover: the old primary died, or Sentinel closed the
 * clients of the primary it demoted). Not `failoverDetector`: its disconnect on `+switch-master`
 * can land while the client is already reconnecting, and ioredis then ends the client for good
 * ("Connection is closed.", seen in test/e2e/redis-sentinel.test.ts).
 */
function sentinelClient(target: RedisTarget, options: RedisOptions): Redis {
  const url = new URL(target.redisUrl);
  const db = Number(url.pathname.slice(1) || 0);
  return new Redis({
    sentinels: target.redisSentinels!.map((n) => ({ host: n.host, port: n.port })),
    name: target.redisSentinelName!,
    ...(target.redisSentinelPassword ? { sentinelPassword: target.redisSentinelPassword } : {}),
    ...(url.username ? { username: decodeURIComponent(url.username) } : {}),
    ...(url.password ? { password: decodeURIComponent(url.password) } : {}),
    // rediss://: TLS to the Sentinels (sentinelTLS) and to the primary they name (tls).
    ...(url.protocol === 'rediss:' ? { tls: {}, sentinelTLS: {}, enableTLSForSentinelMode: true } : {}),
    db: Number.isInteger(db) ? db : 0,
    // Ask every Sentinel again quickly while none answers (ioredis's default waits up to 10 s).
    sentinelRetryStrategy: (times: number) => Math.min(100 * times, 1_000),
    reconnectOnError: retryOnReadonly,
    ...options,
  });
}

// What ioredis says when Redis cannot take a command now: the connection is down or was given up
// on, the command timed out, or the server is a replica, loading, or has lost its primary.
const REDIS_UNAVAILABLE = /^(Connection is closed|Stream isn't writeable|Command timed out|All sentinels are unreachable|LOADING|MASTERDOWN|CLUSTERDOWN|TRYAGAIN)|\bREADONLY\b/;
const REDIS_UNAVAILABLE_NAMES = new Set(['MaxRetriesPerRequestError', 'ClusterAllFailedError']);
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);

/** Whether `err` is ioredis saying Redis is unreachable or cannot serve right now (worth a 503 and a retry), not a bug. */
export function isRedisUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  const e = err as { name?: unknown; message?: unknown; code?: unknown };
  if (typeof e.name === 'string' && REDIS_UNAVAILABLE_NAMES.has(e.name)) return true;
  if (typeof e.code === 'string' && SOCKET_CODES.has(e.code)) return true;
  return typeof e.message === 'string' && REDIS_UNAVAILABLE.test(e.message);
}
