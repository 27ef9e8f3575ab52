import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { withServerSpans } from '@taskapi/telemetry';
import { checkReadiness } from './readiness';
import type { RedisTarget } from './redis-client';
import { redisReadinessCheck } from './redis-readiness';
import { registerReadinessMetrics, type ServiceName } from './readiness-metrics';
import { registerTelemetryMetrics } from './telemetry-metrics';

export interface OpsServer {
  port: number;
  close(): Promise<void>;
}

/**
 * The operations endpoints of a process without an HTTP API (worker, dispatcher), on its own port:
 * `GET /healthz` (alive), `GET /readyz` (every check passes: 200, else 503 naming the failing one)
 * and `GET /metrics` (Prometheus text). Nothing else is served. Registers the readiness gauges of
 * `checks` on `registry` (`taskapi_ready`, `taskapi_backend_up`: see registerReadinessMetrics) and
 * `taskapi_otel_spans_dropped_total`.
 */
export async function startOpsServer(opts: {
  /** The `service` label of the readiness gauges. */
  service: ServiceName;
  host: string;
  port: number;
  registry: Registry;
  checks: Record<string, () => Promise<unknown>>;
}): Promise<OpsServer> {
  registerReadinessMetrics(opts.registry, opts.service, opts.checks);
  registerTelemetryMetrics(opts.registry, opts.service);
  // Probes and scrapes are traced only when the caller sends a sampled `traceparent` (withServerSpans).
  const server = http.createServer(
    withServerSpans((req, res) => {
      const send = (status: number, type: string, body: string) => {
        res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store' });
        res.end(body);
      };
      void (async () => {
        if (req.method !== 'GET') return send(405, 'application/json', '{"message":"Method not allowed."}');
        if (req.url === '/healthz') return send(200, 'application/json', '{"status":"ok"}');
        if (req.url === '/metrics') return send(200, opts.registry.contentType, await opts.registry.metrics());
        if (req.url === '/readyz') {
          const { ready, body } = await checkReadiness(opts.checks);
          return send(ready ? 200 : 503, 'application/json', JSON.stringify(body));
        }
        send(404, 'application/json', '{"message":"Not found."}');
      })().catch(() => send(500, 'application/json', '{"message":"Internal error."}'));
    }),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, resolve);
  });
  return {
    port: (server.address() as AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * The ops server of a worker or dispatcher when `OPS_PORT` is set (readiness = PostgreSQL and
 * Redis answer), else undefined.
 */
export async function startConfiguredOpsServer(
  service: ServiceName,
  config: { host: string; opsPort: number | undefined } & RedisTarget,
  registry: Registry,
  backends: { db: { pool: { query(sql: string): Promise<unknown> } }; redis: { ping(): Promise<unknown> } },
  /** More dependencies to check (the worker's file store). */
  extraChecks: Record<string, () => Promise<unknown>> = {},
): Promise<OpsServer | undefined> {
  if (config.opsPort === undefined) return undefined;
  return startOpsServer({
    service,
    host: config.host,
    port: config.opsPort,
    registry,
    checks: { database: () => backends.db.pool.query('SELECT 1'), redis: redisReadinessCheck(backends.redis, config), ...extraChecks },
  });
}
