export { loadConfig, loadDatabaseUrl, ConfigError } from './load-config';
export type { AdminCredentials, Config, RateLimitPolicy } from './load-config';
