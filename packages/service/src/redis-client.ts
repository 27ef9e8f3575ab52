import { Cluster, Redis, type ClusterOptions, type RedisOptions } from 'ioredis';
import type { Config } from '@taskapi/config';

/** A connection to the configured Redis: one node (`REDIS_URL`) or a cluster (`REDIS_CLUSTER_NODES`). */
export type RedisClient = Redis | Cluster;

/** Where Redis is: the two settings that choose between a single node and a cluster. */
export type RedisTarget = Pick<Config, 'redisUrl' | 'redisClusterNodes'>;

/**
 * The one place a Redis connection is made. With `redisClusterNodes`, a cluster client whose nodes
 * get `options` plus the user, password and TLS of `redisUrl` (its database number is ignored: a
 * cluster has only database 0). Keys a script or MULTI touches together must share a hash tag.
 */
export function createRedisClient(target: RedisTarget, options: RedisOptions = {}): RedisClient {
  if (!target.redisClusterNodes) return new Redis(target.redisUrl, options);
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
