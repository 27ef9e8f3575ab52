// Reusable response components. Task-API responses after authentication carry the rate-limit headers.
import { BASE_HEADERS, RATE_HEADERS, errorResponse, headers, json, response, schema, type OpenApiObject } from './refs';

const anyError = (...names: string[]): OpenApiObject => ({ anyOf: [...names.map(schema), schema('Error')] });

export const responseComponents: Record<string, OpenApiObject> = {
  // Everywhere.
  InternalError: errorResponse('Unexpected error. Logged with the request id.', 'Error', ['InternalError']),
  ServiceUnavailable: errorResponse(
    'PostgreSQL or Redis is unreachable. Never an open door: key and session checks fail closed. `Retry-After: 1`.',
    'Error',
    ['ServiceUnavailable'],
    ['X-Request-Id', 'Retry-After'],
  ),
  MalformedRequest: errorResponse('A path parameter is not valid percent-encoding.', 'Error', ['MalformedRequest']),

  // Task API (API key).
  ApiKeyUnauthorized: {
    description:
      'Authentication failed, checked in this order: `X-Api-Key` absent or blank → `API key required.`; unknown, malformed or ' +
      'revoked → `Invalid API key.`; trial key whose grant has expired → `This trial API key has expired.` with ' +
      '`active_key_prefixes`. Not counted against the rate limit.',
    headers: headers(...BASE_HEADERS),
    content: json(anyError('ExpiredTrialKey'), ['ApiKeyRequired', 'InvalidApiKey', 'TrialKeyExpired']),
  },
  RateLimited: errorResponse(
    'A rate limit of the key is exhausted (paid 300/minute and 100000/day, trial 20/minute and 1000/day by default). Rejected ' +
      'requests are not counted.',
    'RateLimited',
    ['RateLimitedMinute', 'RateLimitedDay'],
    [...RATE_HEADERS, 'Retry-After'],
  ),
  TaskOk: {
    description: 'The task.',
    headers: headers(...RATE_HEADERS),
    content: json(schema('Task')),
  },
  TaskCreated: {
    description:
      'Task created and charged (status 0, queued); or, with a repeated `Idempotency-Key` and the same body, the first response ' +
      'again (`Idempotent-Replayed: true`).',
    headers: headers(...RATE_HEADERS, 'Location', 'Idempotent-Replayed'),
    content: json(schema('Task')),
  },
  TaskMalformedRequest: errorResponse('A path parameter is not valid percent-encoding.', 'Error', ['MalformedRequest'], RATE_HEADERS),
  TaskNotFound: errorResponse("No such task for this account (unknown id, malformed id, or another account's task).", 'Error', ['TaskNotFound'], RATE_HEADERS),
  InsufficientCredits: errorResponse(
    'The paid balance (paid key) or the trial grant quota (trial key) is below the task cost. Nothing is charged.',
    'InsufficientCredits',
    ['InsufficientCredits'],
    RATE_HEADERS,
  ),
  IdempotencyConflict: errorResponse(
    'The `Idempotency-Key` was used in the last 24 hours with a different body.',
    'Error',
    ['IdempotencyKeyReused'],
    RATE_HEADERS,
  ),
  TaskUnsupportedMediaType: errorResponse(
    'A body was sent with a Content-Type other than `application/json`, with an unsupported `Content-Encoding` (gzip, ' +
      'deflate and br are accepted), or in a charset that is not UTF-8/16/32.',
    'Error',
    ['ContentTypeNotJson', 'UnsupportedEncoding'],
    RATE_HEADERS,
  ),

  // Console (login session).
  SessionUnauthorized: errorResponse(
    'The request carries `X-Api-Key` (refused whatever else it carries), or has no valid session: missing, malformed, forged, ' +
      'expired or logged-out token.',
    'Error',
    ['SessionOnly', 'LoginRequired'],
  ),
  CrossSiteRefused: errorResponse(
    'A state-changing request authenticated by the `session` cookie did not come from this site (`Sec-Fetch-Site` not ' +
      '`same-origin`/`none`, or, without it, `Origin` not this server). Bearer-token requests are not checked.',
    'Error',
    ['CrossSiteRefused'],
  ),
  KeyNotFound: errorResponse("No such key for this account (unknown id, malformed id, or another account's key).", 'Error', ['KeyNotFound']),
  ConsoleBodyTooLarge: errorResponse('The body is over 16 KiB.', 'Error', ['BodyTooLarge16KiB']),
  ConsoleUnsupportedMediaType: errorResponse('The JSON body has an unsupported `Content-Encoding` or a charset that is not UTF-8/16/32.', 'Error', ['UnsupportedEncoding']),
};

/** 400 of a task list (`GET /api/tasks`, `GET /api/console/tasks`: the same query rules), with the given headers. */
export const taskListBadRequest = (headerNames: readonly string[]): OpenApiObject => ({
  description: 'A query parameter is invalid, or `cursor` names no task of this account.',
  headers: headers(...headerNames),
  content: json(anyError('ValidationError'), [
    'InvalidStatusParam',
    'InvalidKindParam',
    'InvalidLimitParam',
    'InvalidCursorParam',
    'RepeatedParam',
    'UnknownParam',
    'UnknownCursor',
  ]),
});

/** Responses every console (session) operation can give, by status. */
export const sessionErrors = (method: 'get' | 'post'): OpenApiObject => ({
  '401': response('SessionUnauthorized'),
  ...(method === 'post' ? { '403': response('CrossSiteRefused') } : {}),
  '500': response('InternalError'),
  '503': response('ServiceUnavailable'),
});

/** Responses every task (API-key) operation can give, by status. */
export const apiKeyErrors: OpenApiObject = {
  '401': response('ApiKeyUnauthorized'),
  '429': response('RateLimited'),
  '500': response('InternalError'),
  '503': response('ServiceUnavailable'),
};
