import os from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '@taskapi/config';

/**
 * The suite's own PostgreSQL database and Redis database. `npm test` sets both per run (the test
 * setup starts a Redis server of the run's own and names the database uniquely, see
 * test/global-setup.ts), so a run never touches development data, another project, or a second
 * run in another clone. The defaults serve a test file started without the setup.
 */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/taskapi_test';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/15';

/** A database of a test file's own beside the run's (`<run's database>_<suffix>`), e.g. for its own sweepers. */
export function testDatabaseUrl(suffix: string): string {
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `${url.pathname}_${suffix}`;
  return url.toString();
}

/** The run's Redis server with another database number (a test file's own, so its workers see only its jobs). */
export function testRedisUrl(db: number): string {
  const url = new URL(TEST_REDIS_URL);
  url.pathname = `/${db}`;
  return url.toString();
}

/** Fixed test secrets (never used outside tests). */
const TEST_SECRETS = {
  JWT_SECRET: 'test-jwt-secret-0123456789abcdef0123456789abcdef',
  SECRETS_KEY: Buffer.alloc(32, 7).toString('base64'),
};

/** The environment tests start services with; `overrides` wins. */
export function testEnv(overrides: Record<string, string> = {}): NodeJS.ProcessEnv {
  return {
    NODE_ENV: 'test',
    DATABASE_URL: TEST_DATABASE_URL,
    REDIS_URL: TEST_REDIS_URL,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    FILES_DIR: path.join(os.tmpdir(), 'taskapi-test-files'),
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true',
    // Many tests log in from 127.0.0.1; the throttling test sets its own limits.
    LOGIN_MAX_ATTEMPTS_PER_IP: '100000',
    // Workers of other tests must not expire (with their own file store) the old tasks that the
    // retention test prepares; that test runs the job with its own RETENTION_DAYS.
    RETENTION_DAYS: '36500',
    ...TEST_SECRETS,
    ...overrides,
  };
}

export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig(testEnv(overrides));
}
