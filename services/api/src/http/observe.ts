import type { RequestHandler } from 'express';
import { MODEL_WEBHOOK_PATH } from '@taskapi/domain';
import { sequentialIds } from '@taskapi/ids';
import { flatLineWriter, type Logger } from '@taskapi/logger';
import { recordedTraceId, telemetryMode } from '@taskapi/telemetry';
import { accessLogLevel } from './access-log-level';
import { locals } from './request-context';
import { requestRecorder, type ApiMetrics } from '../infra/metrics';

const INCOMING_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Label of every request no declared route matches: one value, never the raw path (cardinality). */
export const UNMATCHED_ROUTE = 'unmatched';

// A model server's webhook URL ends with its token (a capability: whoever has it can post that
// prediction's result), which the access line must not carry.
const MODEL_WEBHOOK_PREFIX = `${MODEL_WEBHOOK_PATH}/`;

/** The path to log (and to put on a span): no query string, and no token of a model webhook URL. */
export const pathOf = (url: string) => {
  const q = url.indexOf('?');
  const path = q === -1 ? url : url.slice(0, q);
  if (!path.startsWith(MODEL_WEBHOOK_PREFIX)) return path;
  const slash = path.indexOf('/', MODEL_WEBHOOK_PREFIX.length);
  return slash === -1 ? path : `${path.slice(0, slash)}/[token]`;
};

/** Express's `/files/:name` in the registry's `{name}` style, so one label format is used everywhere. */
function expressPattern(path: unknown, baseUrl: string): string | undefined {
  return typeof path === 'string' ? `${baseUrl}${path}`.replace(/:(\w+)/g, '{$1}') : undefined;
}

/** The access line's fields, in the order `observe` passes their values. */
const ACCESS_FIELDS = ['request_id', 'method', 'path', 'status', 'duration_ms', 'account_id', 'key_prefix', 'public_id', 'trace_id'];

/**
 * Request id (`X-Request-Id`, accepted from the caller when well-formed), one access-log line and
 * metrics per request (the line at debug level for probes, scrapes and static assets, see
 * `accessLogLevel`). Never logs headers or bodies.
 */
export function observe(logger: Logger, metrics: ApiMetrics): RequestHandler {
  const nextRequestId = sequentialIds('request');
  const record = requestRecorder(metrics);
  const accessLine = flatLineWriter(logger, 'request', ACCESS_FIELDS);
  // Without the SDK there is no server span: only a route that knows its trace (a creation) sets one.
  const spans = telemetryMode() === 'export';
  return (req, res, next) => {
    const incoming = req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && INCOMING_ID.test(incoming) ? incoming : nextRequestId();
    const ctx = locals(res);
    // With the SDK, the request's trace when it is recorded (a write, or a caller's sampled
    // `traceparent`), read while the HTTP server span is the active one.
    const traceId = spans ? recordedTraceId() : undefined;
    ctx.requestId = requestId;
    ctx.startedAt = process.hrtime.bigint();
    res.setHeader('X-Request-Id', requestId);
    let observed = false;
    const done = () => {
      if (observed) return;
      observed = true;
      const now = process.hrtime.bigint();
      const seconds = Number(now - ctx.startedAt) / 1e9;
      // The declared route template (set by the route table, `mount-routes.ts`, before
      // authentication) keeps label cardinality bounded (no ids in labels) and is the same for every
      // status, 401 and 429 included. Pages outside the registry (docs, console, Bull Board) fall
      // back to Express's matched pattern; anything else is `unmatched`.
      const route = ctx.route ?? expressPattern(req.route?.path, req.baseUrl) ?? UNMATCHED_ROUTE;
      // An event stream's request ends when its headers go out; how long it then stayed open is
      // its own histogram (a stream held for an hour is not a slow request).
      if (ctx.streamOpenedAt === undefined) record(req.method, route, res.statusCode, seconds);
      else {
        record(req.method, route, res.statusCode, Number(ctx.streamOpenedAt - ctx.startedAt) / 1e9);
        metrics.eventStreamDuration.observe({ route }, Number(now - ctx.streamOpenedAt) / 1e9);
      }
      // Access lines are info or debug: below info there is nothing to build.
      if (!logger.isInfoEnabled()) return;
      const path = pathOf(req.originalUrl);
      const level = accessLogLevel(path);
      if (!logger.isLevelEnabled(level)) return;
      accessLine(level, [
        requestId,
        req.method,
        path,
        res.statusCode,
        Math.round(seconds * 1e5) / 100,
        ctx.key?.accountId ?? ctx.session?.accountId,
        ctx.key?.keyPrefix,
        ctx.publicId,
        ctx.traceId ?? traceId,
      ]);
    };
    res.on('finish', done);
    // An event stream usually ends by its client going away: no 'finish' then, only 'close'.
    res.on('close', () => {
      if (ctx.streamOpenedAt !== undefined) done();
    });
    next();
  };
}
