/**
 * An error with a client-facing status and JSON body. `message` is sent as-is, so it must never
 * contain secrets or internals. The spec's exact messages live with the code that throws them.
 */
export class HttpError extends Error {
  override name = 'HttpError';
  constructor(
    readonly status: number,
    message: string,
    /** Extra top-level fields of the JSON body, next to `message`. */
    readonly extra: Record<string, unknown> = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  body(): Record<string, unknown> {
    return { message: this.message, ...this.extra };
  }
}

export const badRequest = (message: string, extra?: Record<string, unknown>) => new HttpError(400, message, extra);
export const notFound = (message = 'Not found.') => new HttpError(404, message);
export const conflict = (message: string, extra?: Record<string, unknown>) => new HttpError(409, message, extra);
export const unprocessable = (message: string, extra?: Record<string, unknown>) => new HttpError(422, message, extra);

/** Redis or PostgreSQL is unreachable: never an open door, never a 500. */
export class ServiceUnavailableError extends HttpError {
  constructor(readonly dependency: 'redis' | 'database', cause?: unknown) {
    super(503, 'Service temporarily unavailable. Please retry shortly.', {}, { 'Retry-After': '1' });
    this.cause = cause;
  }
}
