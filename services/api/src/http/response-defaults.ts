import type { RequestHandler } from 'express';

const API_PATH = /^\/api\//i;

/**
 * Headers of every response: conservative security headers, `Cache-Control: no-store` on `/api`
 * responses (never cached by default), and `Connection: close` while draining before shutdown (each
 * connection ends after its response, so keep-alive clients reconnect to a replica that is staying).
 */
export function responseDefaults(lifecycle: { draining: boolean }): RequestHandler {
  return (req, res, next) => {
    if (lifecycle.draining) res.setHeader('Connection', 'close');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.setHeader('X-Frame-Options', 'DENY');
    res.setHeader('Referrer-Policy', 'no-referrer');
    res.setHeader('Cross-Origin-Opener-Policy', 'same-origin');
    // Case-insensitive, as the routes match.
    if (API_PATH.test(req.path)) res.setHeader('Cache-Control', 'no-store');
    next();
  };
}
