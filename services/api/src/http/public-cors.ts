import cors from 'cors';
import type { RequestHandler } from 'express';

/**
 * CORS for `/api/public/*` only (browser read tokens, docs/api.md): an `Origin` in
 * `CORS_ALLOWED_ORIGINS` (or any, with `*`) gets `Access-Control-Allow-Origin` with itself and
 * `Vary: Origin`; a preflight (`OPTIONS`) is answered `204` here, before authentication and rate
 * limits: from an allowed origin with the methods and headers a page may use, from any other with
 * nothing (so the browser refuses it). Through the `cors` package rather than hand-set headers.
 */
export function publicCors(allowed: readonly string[]): RequestHandler {
  const anyOrigin = allowed.includes('*');
  const origins = new Set(allowed);
  const allow = cors({
    origin: (origin, done) => done(null, origin !== undefined && (anyOrigin || origins.has(origin)) ? origin : false),
    methods: ['GET'],
    // The token, the version, a reconnecting stream's last event; and what the key's routes also
    // honour: a waiting read, a file's ranges and conditional requests.
    allowedHeaders: ['Authorization', 'TaskApi-Version', 'Last-Event-ID', 'Prefer', 'Range', 'If-None-Match', 'If-Modified-Since', 'If-Range'],
    // What a page may read of an answer besides the simple headers.
    exposedHeaders: [
      'RateLimit',
      'RateLimit-Policy',
      'Retry-After',
      'TaskApi-Version',
      'X-Request-Id',
      'Content-Disposition',
      'Preference-Applied',
      'ETag',
      'Content-Range',
      'Accept-Ranges',
    ],
    maxAge: 600,
    optionsSuccessStatus: 204,
  });
  const otherPreflight: RequestHandler = (req, res, next) => {
    if (req.method !== 'OPTIONS') {
      next();
      return;
    }
    res.status(204).end();
  };
  // A prefix test of our own rather than `app.use(path, …)`: every request of the API passes here,
  // and Express's mount matching cost the read path measurably (docs/performance.md).
  return (req, res, next) => {
    const path = req.path;
    if (path.length < PREFIX.length || path.slice(0, PREFIX.length).toLowerCase() !== PREFIX) {
      next();
      return;
    }
    allow(req, res, (err?: unknown) => (err ? next(err) : otherPreflight(req, res, next)));
  };
}

const PREFIX = '/api/public/';
