export { ConfigError } from './config-error';
export { CONFIG_VARIABLES, loadConfig, loadDatabaseUrl, loadTelemetryConfig } from './load-config';
export type { AdminCredentials, Config, RateLimitPolicy, TelemetryConfig } from './load-config';
