import os from 'node:os';
import path from 'node:path';
import { loadConfig, type Config } from '@taskapi/config';

/** The suite's own database and Redis database, so a test run never touches development data. */
export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/taskapi_test';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379/15';

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
