export { TEST_DATABASE_URL, TEST_REDIS_URL, testDatabaseUrl, testRedisUrl, testEnv, testConfig } from './env';
export { request } from './http';
export type { TestResponse, RequestOptions } from './http';
export { waitFor } from './wait';
export { dropTestDatabases, recreateDatabase } from './database';
export { TEST_PASSWORD, testPasswordHash, uniqueEmail } from './accounts';
export { startTcpRelay } from './tcp-relay';
export type { TcpRelay } from './tcp-relay';
export { testCa } from './test-ca';
export type { TestCa } from './test-ca';
export { startHttpsReceiver } from './https-receiver';
export type { HttpsReceiver, ReceivedRequest, ReceiverReply } from './https-receiver';
export { inspectVideo } from './inspect-video';
export type { VideoFacts } from './inspect-video';
export { commandLine, descendants, isAlive, processName } from './processes';
export { claimRedisDb } from './redis-db';
export { startRedisCluster } from './redis-cluster';
export { SENTINEL_MASTER_NAME, startRedisSentinels } from './redis-sentinel';
export { startPostgresPair } from './postgres-pair';
export type { PostgresPair, PostgresStopMode } from './postgres-pair';
export type { RedisSentinelGroup } from './redis-sentinel';
export { answersPing, startPrivateRedis } from './redis-server';
export type { PrivateRedis } from './redis-server';
export type { LocalRedisCluster } from './redis-cluster';
export { freePort } from './free-port';
export { parseMetrics } from './prometheus-text';
export type { MetricSample } from './prometheus-text';
export { seriesSelectors } from './promql-selectors';
export type { LabelMatcher, SeriesSelector } from './promql-selectors';
export { startPrometheus } from './prometheus-server';
export type { PrometheusOptions, PrometheusSample, PrometheusServer, ScrapeTarget } from './prometheus-server';
export { startSwift, SWIFT_CREDENTIALS, SWIFT_PACKAGES } from './swift';
export type { SwiftServer } from './swift';
export { installClientPackage } from './client-package';
export { CogFile, HEALTH_STATUSES, MODEL_NAMES, createModel, spawnCogServer, startCogServer, tqdmLine, validateInput, withDefaults } from './cog-server';
export type {
  CogModel,
  CogServer,
  CogServerOptions,
  HealthStatus,
  InputSchema,
  MetricMode,
  ModelName,
  OutputAs,
  PredictionJson,
  PredictionRecord,
  RunContext,
  SpawnCogServerOptions,
  SpawnedCogServer,
} from './cog-server';
export { decodeExportTraceServiceRequest, decodeJsonExportTraceServiceRequest, startOtlpReceiver } from './otlp-receiver';
export type { OtlpReceiver, ReceivedLink, ReceivedSpan } from './otlp-receiver';
