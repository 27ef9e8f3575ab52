import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from '@taskapi/logger';
import { ApiError, unavailable } from '../errors';
import { locals } from './request-context';

interface BodyParserError extends Error {
  type?: string;
  status?: number;
  limit?: number;
}

// Connection-level failures of PostgreSQL: the database is unreachable or restarting.
const PG_UNAVAILABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03', '53300']);

function isDatabaseUnavailable(err: unknown): boolean {
  if (typeof err !== 'object' || err === null) return false;
  // Socket errors surface from pg as plain objects with a code, not always as Error instances.
  const { code, message } = err as { code?: unknown; message?: unknown };
  if (typeof code === 'string' && (PG_UNAVAILABLE_CODES.has(code) || code.startsWith('08'))) return true;
  return typeof message === 'string' && /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error/.test(message);
}

function fromBodyParser(err: BodyParserError): ApiError | null {
  switch (err.type) {
    case 'entity.parse.failed':
      return new ApiError('MALFORMED_JSON');
    case 'entity.too.large':
      return new ApiError('BODY_TOO_LARGE', { params: { limit: err.limit } });
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new ApiError('UNSUPPORTED_ENCODING');
    case 'request.aborted':
    case 'request.size.invalid':
    case 'stream.encoding.set':
      return new ApiError('BODY_UNREADABLE');
    default:
      return null;
  }
}

/** The error as one of the API's codes, or null when it is a bug. */
function classify(err: unknown): ApiError | null {
  if (err instanceof ApiError) return err;
  if (err instanceof Error && 'type' in err) {
    const fromParser = fromBodyParser(err as BodyParserError);
    if (fromParser) return fromParser;
  }
  if (isDatabaseUnavailable(err)) return unavailable('database', err);
  const status = err instanceof Error ? (err as BodyParserError).status : undefined;
  // Errors Express raises itself for a bad request (an undecodable path parameter, a bad Range).
  if (typeof status === 'number' && status >= 400 && status < 500) return new ApiError('MALFORMED_REQUEST', { status });
  return null;
}

/**
 * The one place that knows how errors become HTTP: an `ApiError` answers with its code's status,
 * message and fields (plus `Retry-After` when it has one); anything else is logged and becomes 500.
 */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, next) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    const requestId = locals(res).requestId;
    const error = classify(err) ?? new ApiError('INTERNAL', { cause: err });
    if (error.code === 'INTERNAL') {
      logger.error('unhandled error', { request_id: requestId, method: req.method, path: req.path, error: err });
    } else if (error.code === 'SERVICE_UNAVAILABLE') {
      const { dependency, error: cause } = error.cause as { dependency: string; error: unknown };
      logger.error('dependency unavailable', { request_id: requestId, dependency, error: cause });
    }
    const retryAfter = error.retryAfter;
    if (retryAfter !== undefined) res.setHeader('Retry-After', String(retryAfter));
    res.status(error.status).json(error.body());
  };
}

export const notFoundHandler: RequestHandler = (_req, _res, next) => {
  next(new ApiError('NOT_FOUND'));
};
