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

/**
 * PostgreSQL refusing a value rather than failing: class 22 (data exception: bytes it cannot
 * store, a number out of range for its column, a bad date) and 54000 (a value too large to index).
 * Validation should catch these first; whatever slips through is the client's input, never a 500.
 */
function isUnstorableValue(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code !== 'string') return false;
  // pg's DatabaseError carries `severity`; Prisma reports the same refusals as P2000 (too long for
  // the column), P2006/P2007 (invalid value), P2020 (out of range), P2033 (number too large).
  if (/^(P2000|P2006|P2007|P2020|P2033)$/.test(code)) return true;
  return /^(22[0-9A-Z]{3}|54000)$/.test(code) && (err as { severity?: unknown }).severity !== undefined;
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
  if (isUnstorableValue(err)) return new ApiError('UNSTORABLE_VALUE', { cause: err });
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
    res.status(error.status).json(error.body());
  };
}

export const notFoundHandler: RequestHandler = (_req, _res, next) => {
  next(new ApiError('NOT_FOUND'));
};
