// Runs once before the suite: a freshly created and migrated test database and an empty test Redis
// database, so runs are independent of each other and of development data.
import { Redis } from 'ioredis';
import { TEST_DATABASE_URL, TEST_REDIS_URL, recreateDatabase } from '@taskapi/testing';

export default async function globalSetup(): Promise<void> {
  await recreateDatabase(TEST_DATABASE_URL);
  const redis = new Redis(TEST_REDIS_URL);
  try {
    await redis.flushdb();
  } finally {
    redis.disconnect();
  }
}
