import { BULL_BOARD_PATH } from './paths';

/** Probes and scrapes: answered every few seconds by design, so one line each would drown the log. */
const QUIET_PATHS = new Set(['/healthz', '/readyz', '/metrics', '/favicon.ico']);

/** Static files (the console's, Swagger UI's and Bull Board's): many per page view, never interesting alone. */
const QUIET_PREFIXES = ['/app/assets/', '/docs/assets/', '/docs/init.js', '/docs/docs.css', `${BULL_BOARD_PATH}/static/`];

/**
 * The level of a request's access-log line: `debug` for health checks, metrics scrapes and static
 * assets, `info` for everything else. `path` is the URL path without the query string.
 */
export function accessLogLevel(path: string): 'debug' | 'info' {
  if (QUIET_PATHS.has(path)) return 'debug';
  return QUIET_PREFIXES.some((prefix) => path.startsWith(prefix)) ? 'debug' : 'info';
}
