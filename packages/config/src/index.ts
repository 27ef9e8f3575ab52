export { ConfigError } from './config-error';
export { CONFIG_VARIABLES, loadConfig, loadDatabaseUrl } from './load-config';
export type { AdminCredentials, Config, RateLimitPolicy } from './load-config';
