// Runs once after the suite: drops this run's databases and stops its Redis server (see
// global-setup.ts). Backends chosen with TEST_DATABASE_URL / TEST_REDIS_URL are left as they are.
import { dropTestDatabases } from '@taskapi/testing';

export default async function globalTeardown(): Promise<void> {
  const run = globalThis.taskapiTestRun;
  if (!run) return;
  if (run.databaseUrl) await dropTestDatabases(run.databaseUrl);
  await run.redis?.stop();
}
