// Runs once before the suite: builds dist/ (tests start services the way users do, from the built
// files), then gives the suite a freshly created and migrated test database and an empty test
// Redis database, so runs are independent of each other and of development data.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { TEST_DATABASE_URL, TEST_REDIS_URL, claimRedisDb, recreateDatabase } from '@taskapi/testing';

export default async function globalSetup(): Promise<void> {
  const build = spawnSync('npm', ['run', '--silent', 'build'], { cwd: path.resolve(__dirname, '..'), encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`npm run build failed (${build.status}):\n${build.stdout}${build.stderr}`);
  await recreateDatabase(TEST_DATABASE_URL);
  await claimRedisDb(TEST_REDIS_URL);
}
