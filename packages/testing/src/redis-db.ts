import { Redis } from 'ioredis';

/** Kept in every Redis database the suite uses, so it only ever empties its own. */
const OWNER_KEY = 'taskapi-test-suite:owner';

/**
 * Empties the Redis database of `url` for a test, and marks it as the suite's. A database that
 * holds keys but not the mark (someone else's data on a shared server) is left untouched: the
 * call fails, naming it.
 */
export async function claimRedisDb(url: string): Promise<void> {
  const redis = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  try {
    await redis.connect();
    if ((await redis.dbsize()) > 0 && (await redis.exists(OWNER_KEY)) === 0) {
      throw new Error(`Redis database ${url} holds keys the test suite did not create; refusing to empty it (choose another TEST_REDIS_URL)`);
    }
    await redis.flushdb();
    await redis.set(OWNER_KEY, 'the taskapi test suite empties this database on every run');
  } finally {
    redis.disconnect();
  }
}
