export { ConfigError } from './config-error';
export { loadConfig, loadDatabaseUrl } from './load-config';
export type { AdminCredentials, Config, RateLimitPolicy } from './load-config';
