import type { Config } from 'jest';

const config: Config = {
  testEnvironment: 'node',
  transform: { '^.+\\.ts$': ['ts-jest', { tsconfig: '<rootDir>/tsconfig.jest.json' }] },
  testMatch: ['<rootDir>/packages/*/test/**/*.test.ts', '<rootDir>/services/*/test/**/*.test.ts', '<rootDir>/test/e2e/**/*.test.ts', '<rootDir>/test/deploy/**/*.test.ts', '<rootDir>/test/db/**/*.test.ts', '<rootDir>/bench/**/*.test.ts'],
  globalSetup: '<rootDir>/test/global-setup.ts',
  globalTeardown: '<rootDir>/test/global-teardown.ts',
  testTimeout: 30_000,
  // Two cores: more workers only add contention for PostgreSQL and Redis.
  maxWorkers: 2,
};

export default config;
