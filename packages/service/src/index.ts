import { loadConfig, type Config } from '@taskapi/config';
import { createLogger, type Logger } from '@taskapi/logger';
import { releaseMemoryWhenIdle } from './idle-memory';
import { flushTelemetry } from './telemetry-metrics';

export { Batcher, BatchedStatement } from './batcher';
export type { BatcherOptions, BatchedStatementOptions } from './batcher';
export { connectBackends } from './backends';
export { createRedisClient, isRedisUnavailable } from './redis-client';
export type { RedisClient, RedisTarget } from './redis-client';
export { isPlatformFault, retryWhileUnavailable, StoppedWhileUnavailableError } from './platform-faults';
export type { RetryWhileUnavailableOptions } from './platform-faults';
export { runPeriodically } from './periodic';
export { PubSubFanout } from './pubsub-fanout';
export type { FanoutEvent } from './pubsub-fanout';
export { startConfiguredOpsServer, startOpsServer } from './ops-server';
export { checkReadiness, ReadinessProblem } from './readiness';
export { askSentinels, describeAnswers, describeRedisProblem, redisReadinessCheck, reportWhileWaitingForRedis, sentinelProblem } from './redis-readiness';
export type { SentinelAnswer } from './redis-readiness';
export { registerReadinessMetrics } from './readiness-metrics';
export { flushTelemetry, registerTelemetryMetrics } from './telemetry-metrics';
export type { ServiceName } from './readiness-metrics';
export type { Readiness } from './readiness';
export type { OpsServer } from './ops-server';
export type { Periodic } from './periodic';
export type { Backends } from './backends';

/** Stops what `start` started: stop taking work, finish or hand back what is in flight, close pools. */
export type Stop = () => Promise<void>;

export interface ServiceOptions {
  /** Written on every log line. */
  name: string;
  /**
   * How long a graceful stop may take before the process exits anyway (status 1); default 20 s.
   * A function of the configuration when it depends on it (the API's drain period).
   */
  stopTimeoutMs?: number | ((config: Config) => number);
}

/**
 * Runs one service process: loads and validates the configuration, creates the logger, starts the
 * service and stops it gracefully on SIGTERM/SIGINT. A failure to start (bad configuration,
 * unreachable dependency) prints the reason and exits 1.
 */
export function runService(opts: ServiceOptions, start: (config: Config, logger: Logger) => Promise<Stop>): void {
  // Handlers first: a signal that arrives while the service is still starting (a pod scaled down
  // during boot) is remembered and honoured as soon as it has started, never a hard kill mid-job.
  // SIGHUP too: closing the terminal of `npm start` sends it to every service.
  let pending: string | undefined;
  let bootDeadline: NodeJS.Timeout | undefined;
  let onSignal: (signal: string) => void = (signal) => {
    pending ??= signal;
    // A start that hangs (an unreachable dependency) must not keep the process alive forever.
    bootDeadline ??= setTimeout(() => process.exit(1), 20_000).unref();
  };
  for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) process.on(signal, () => onSignal(signal));

  const boot = async () => {
    const config = loadConfig();
    const logger = createLogger({ service: opts.name, level: config.logLevel });
    for (const warning of config.warnings) logger.warn(warning);
    const stop = await start(config, logger);
    const idleMemory = releaseMemoryWhenIdle({ idleMs: config.memoryReleaseIdleMs, logger });
    const stopTimeoutMs = typeof opts.stopTimeoutMs === 'function' ? opts.stopTimeoutMs(config) : (opts.stopTimeoutMs ?? 20_000);

    let stopping = false;
    const shutdown = async (signal: string) => {
      if (stopping) return;
      stopping = true;
      logger.info('shutting down', { signal });
      idleMemory.stop();
      const force = setTimeout(() => {
        logger.error('shutdown timed out; exiting');
        process.exit(1);
      }, stopTimeoutMs).unref();
      try {
        await stop();
        // Spans of the last second (the stop's own) would die with the process.
        await flushTelemetry();
        clearTimeout(force);
        logger.info('stopped');
        process.exit(0);
      } catch (err) {
        logger.error('shutdown failed', { error: err });
        process.exit(1);
      }
    };
    onSignal = (signal) => void shutdown(signal);
    clearTimeout(bootDeadline);
    if (pending) onSignal(pending);
  };
  boot().catch((err: unknown) => {
    // The logger may not exist yet (bad configuration): plain stderr, message only.
    process.stderr.write(`${opts.name} failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
