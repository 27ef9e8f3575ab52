import type { RequestHandler } from 'express';
import { sequentialIds } from '@taskapi/ids';
import type { Logger } from '@taskapi/logger';
import { accessLogLevel } from './access-log-level';
import { locals } from './request-context';
import type { ApiMetrics } from '../infra/metrics';

const INCOMING_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * Request id (`X-Request-Id`, accepted from the caller when well-formed), one access-log line and
 * metrics per request (the line at debug level for probes, scrapes and static assets, see
 * `accessLogLevel`). Never logs headers or bodies.
 */
export function observe(logger: Logger, metrics: ApiMetrics): RequestHandler {
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
      // The matched route pattern keeps label cardinality bounded (no ids in labels).
      const route = req.route?.path ? `${req.baseUrl}${String(req.route.path)}` : 'unmatched';
      metrics.httpRequests.inc({ method: req.method, route, status: String(res.statusCode) });
      metrics.httpDuration.observe({ method: req.method, route }, seconds);
      // Access lines are info or debug: below info (production's warn) there is nothing to build.
      if (!logger.isInfoEnabled()) return;
      const path = req.originalUrl.split('?')[0] ?? '';
      const level = accessLogLevel(path);
      if (!logger.isLevelEnabled(level)) return;
      logger.log(level, 'request', {
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
