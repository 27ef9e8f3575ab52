export { TEST_DATABASE_URL, TEST_REDIS_URL, testEnv, testConfig } from './env';
export { request } from './http';
export type { TestResponse, RequestOptions } from './http';
export { waitFor } from './wait';
export { recreateDatabase } from './database';
export { TEST_PASSWORD, testPasswordHash, uniqueEmail } from './accounts';
export { startTcpRelay } from './tcp-relay';
export type { TcpRelay } from './tcp-relay';
