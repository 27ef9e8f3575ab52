import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from '@taskapi/logger';
import { HttpError, ServiceUnavailableError } from './errors';
import { locals } from './request-context';

interface BodyParserError extends Error {
  type?: string;
  status?: number;
  expose?: boolean;
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

function fromBodyParser(err: BodyParserError): HttpError | null {
  switch (err.type) {
    case 'entity.parse.failed':
      return new HttpError(400, 'Malformed JSON body.');
    case 'entity.too.large':
      return new HttpError(413, `Request body too large (limit ${err.limit ?? 'exceeded'} bytes).`);
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new HttpError(415, 'Unsupported body encoding; send UTF-8 JSON.');
    case 'request.aborted':
    case 'request.size.invalid':
    case 'stream.encoding.set':
      return new HttpError(400, 'The request body could not be read.');
    default:
      return null;
  }
}

/** One place that turns every error into a JSON response; unknown errors are logged and become 500. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, next) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    let httpError: HttpError | null = null;
    if (err instanceof HttpError) httpError = err;
    else if (err instanceof Error && 'type' in err) httpError = fromBodyParser(err as BodyParserError);
    if (!httpError && isDatabaseUnavailable(err)) httpError = new ServiceUnavailableError('database', err);
    if (!httpError && err instanceof Error) {
      const status = (err as BodyParserError).status;
      // Errors Express raises itself for a bad request (e.g. an undecodable path parameter).
      if (typeof status === 'number' && status >= 400 && status < 500) httpError = new HttpError(status, 'Malformed request.');
    }

    const requestId = locals(res).requestId;
    if (!httpError) {
      logger.error('unhandled error', { request_id: requestId, method: req.method, path: req.path, error: err });
      res.status(500).json({ message: 'Internal server error.' });
      return;
    }
    if (httpError instanceof ServiceUnavailableError) {
      logger.error('dependency unavailable', { request_id: requestId, dependency: httpError.dependency, error: httpError.cause });
    }
    for (const [name, value] of Object.entries(httpError.headers)) res.setHeader(name, value);
    res.status(httpError.status).json(httpError.body());
  };
}

export const notFoundHandler: RequestHandler = (_req, _res, next) => {
  next(new HttpError(404, 'Not found.'));
};
