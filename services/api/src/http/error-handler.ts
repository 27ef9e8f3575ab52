import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from '@taskapi/logger';
import { isDatabaseUnavailable, isValueRefused } from '@taskapi/db';
import { StorageUnavailableError } from '@taskapi/file-store';
import { isRedisUnavailable } from '@taskapi/service';
import { ApiError, unavailable } from '../errors';
import { downgradeResponse } from './api-version';
import { locals } from './request-context';

interface BodyParserError extends Error {
  type?: string;
  status?: number;
  limit?: number;
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
  if (isRedisUnavailable(err)) return unavailable('redis', err);
  if (err instanceof StorageUnavailableError) return unavailable('storage', err);
  // Validation should catch these first; whatever slips through is the client's input, never a 500.
  if (isValueRefused(err)) return new ApiError('UNSTORABLE_VALUE', { cause: err });
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
    } else if (error.code === 'UNSTORABLE_VALUE') {
      // Input validation missed something PostgreSQL refuses: worth a look, but the client's fault.
      // The code only: the database's message may quote the value.
      const { code } = error.cause as { code: string };
      logger.warn('database refused a request value', { request_id: requestId, method: req.method, path: req.path, db_code: code });
    } else if (error.code === 'SERVICE_UNAVAILABLE') {
      const { dependency, error: cause } = error.cause as { dependency: string; error: unknown };
      logger.error('dependency unavailable', { request_id: requestId, dependency, error: cause });
    }
    const retryAfter = error.retryAfter;
    if (retryAfter !== undefined) res.setHeader('Retry-After', String(retryAfter));
    res.status(error.status).json(downgradeResponse(req, res, error.status, error.body()));
  };
}

export const notFoundHandler: RequestHandler = (_req, _res, next) => {
  next(new ApiError('NOT_FOUND'));
};
