import type { RequestHandler } from 'express';
import { sequentialIds } from '@taskapi/ids';
import { logFlatLine, type Logger } from '@taskapi/logger';
import { accessLogLevel } from './access-log-level';
import { locals } from './request-context';
import type { ApiMetrics } from '../infra/metrics';
import { UNMATCHED_ROUTE } from './route-templates';

const INCOMING_ID = /^[A-Za-z0-9._:-]{1,128}$/;

const pathOf = (url: string) => url.split('?')[0] ?? '';

/** Express's `/files/:name` in the registry's `{name}` style, so one label format is used everywhere. */
function expressPattern(path: unknown, baseUrl: string): string | undefined {
  return typeof path === 'string' ? `${baseUrl}${path}`.replace(/:(\w+)/g, '{$1}') : undefined;
}

/**
 * Request id (`X-Request-Id`, accepted from the caller when well-formed), one access-log line and
 * metrics per request (the line at debug level for probes, scrapes and static assets, see
 * `accessLogLevel`). Never logs headers or bodies.
 */
export function observe(
  logger: Logger,
  metrics: ApiMetrics,
  routeTemplate: (method: string, path: string) => string | undefined,
): RequestHandler {
  const nextRequestId = sequentialIds('request');
  return (req, res, next) => {
    const incoming = req.get('x-request-id');
    const requestId = incoming && INCOMING_ID.test(incoming) ? incoming : nextRequestId();
    const ctx = locals(res);
    ctx.requestId = requestId;
    ctx.startedAt = process.hrtime.bigint();
    res.setHeader('X-Request-Id', requestId);
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - ctx.startedAt) / 1e9;
      // The declared route template keeps label cardinality bounded (no ids in labels) and is the
      // same for every status, 401 and 429 included. Pages outside the registry (docs, console,
      // Bull Board) fall back to Express's matched pattern; anything else is `unmatched`.
      const path = pathOf(req.originalUrl);
      const route = routeTemplate(req.method, path) ?? expressPattern(req.route?.path, req.baseUrl) ?? UNMATCHED_ROUTE;
      metrics.httpRequests.inc({ method: req.method, route, status: String(res.statusCode) });
      metrics.httpDuration.observe({ method: req.method, route }, seconds);
      // Access lines are info or debug: below info (production's warn) there is nothing to build.
      if (!logger.isInfoEnabled()) return;
      const level = accessLogLevel(path);
      if (!logger.isLevelEnabled(level)) return;
      // Written directly (the same JSON as logger.log): winston's format chain cost more than some requests.
      logFlatLine(logger, level, 'request', {
        request_id: requestId,
        method: req.method,
        path,
        status: res.statusCode,
        duration_ms: Math.round(seconds * 1e5) / 100,
        account_id: ctx.key?.accountId ?? ctx.session?.accountId,
        key_prefix: ctx.key?.keyPrefix,
        public_id: ctx.publicId,
      });
    });
    next();
  };
}
