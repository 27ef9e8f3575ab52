import { ConfigError, loadTelemetryConfig } from '@taskapi/config';
import { startTelemetry } from './start-telemetry';

/**
 * `startTelemetry` with the `OTEL_*` settings of the environment. Invalid settings start nothing
 * here: the service's own configuration load reports them (with every other problem) and exits.
 */
export function startTelemetryFromEnv(serviceName: string): void {
  let settings;
  try {
    settings = loadTelemetryConfig();
  } catch (err) {
    if (err instanceof ConfigError) return;
    throw err;
  }
  startTelemetry(serviceName, settings);
}
