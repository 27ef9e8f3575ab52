export { loadConfig, loadDatabaseUrl, ConfigError } from './load-config';
export type { Config, RateLimitPolicy } from './load-config';
