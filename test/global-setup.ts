// Runs once before the suite: builds dist/ (tests start services the way users do, from the built
// files), then gives this run backends of its own, so `npm test` passes beside anything else on
// the machine (an `npm start`, another project's Redis data, a second `npm test` in another clone):
// - a Redis server of its own on a free port (no data saved), whose databases the test files use;
// - a freshly created and migrated PostgreSQL database named for this run, `taskapi_test_r<pid>_<random>`
//   (test files that need their own add a suffix), all dropped by the teardown. Databases of earlier
//   runs whose process is gone (interrupted runs) are dropped here.
// TEST_DATABASE_URL and TEST_REDIS_URL, when set, choose the backends instead (then nothing else is
// dropped or started). docs/testing.md has the details.
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { withServerClient } from '@taskapi/db';
import { claimRedisDb, dropTestDatabases, isAlive, recreateDatabase, startPrivateRedis, TEST_DATABASE_URL, type PrivateRedis } from '@taskapi/testing';

const RUN_PREFIX = 'taskapi_test_r';

declare global {
  var taskapiTestRun: { redis?: PrivateRedis; databaseUrl?: string } | undefined;
}

export default async function globalSetup(): Promise<void> {
  const build = spawnSync('npm', ['run', '--silent', 'build'], { cwd: path.resolve(__dirname, '..'), encoding: 'utf8' });
  if (build.status !== 0) throw new Error(`npm run build failed (${build.status}):\n${build.stdout}${build.stderr}`);
  const run: NonNullable<typeof globalThis.taskapiTestRun> = {};
  globalThis.taskapiTestRun = run;

  if (process.env.TEST_REDIS_URL) {
    await claimRedisDb(process.env.TEST_REDIS_URL);
  } else {
    run.redis = await startPrivateRedis();
    process.env.TEST_REDIS_URL = `${run.redis.url}/15`;
  }

  if (process.env.TEST_DATABASE_URL) {
    await recreateDatabase(process.env.TEST_DATABASE_URL);
  } else {
    // The server of the default test database (127.0.0.1:5432), the database name chosen per run.
    const server = TEST_DATABASE_URL;
    await dropAbandonedRuns(server);
    const url = new URL(server);
    url.pathname = `/${RUN_PREFIX}${process.pid}_${randomBytes(3).toString('hex')}`;
    run.databaseUrl = url.toString();
    process.env.TEST_DATABASE_URL = run.databaseUrl;
    await recreateDatabase(run.databaseUrl);
  }
}

/** Databases of runs whose jest process is gone (interrupted before their teardown). */
async function dropAbandonedRuns(serverUrl: string): Promise<void> {
  const names = await withServerClient(serverUrl, async (client) => {
    const { rows } = await client.query<{ datname: string }>('SELECT datname FROM pg_database WHERE starts_with(datname, $1)', [RUN_PREFIX]);
    return rows.map((r) => r.datname);
  });
  for (const name of names) {
    const pid = Number(/^taskapi_test_r(\d+)_[0-9a-f]+$/.exec(name)?.[1]);
    if (!Number.isInteger(pid) || isAlive(pid)) continue;
    const url = new URL(serverUrl);
    url.pathname = `/${name}`;
    await dropTestDatabases(url.toString());
  }
}
