// What the document says about error codes beyond their message (src/errors.ts): sample fields for
// the examples, and when each code is answered.
import { MAX_WAITERS, MAX_WAITERS_PER_ACCOUNT } from '../domain/task-waiters';
import { API_ERRORS, ApiError, type ErrorCode } from '../errors';

interface ExampleFields {
  summary: string;
  fields?: Record<string, unknown>;
  /** A concrete message for codes whose message is built from the request. */
  message?: string;
}

export const ERROR_EXAMPLE_FIELDS: Partial<Record<ErrorCode, ExampleFields>> = {
  TRIAL_KEY_EXPIRED: { summary: "Trial key whose grant expired; the account's other working trial keys", fields: { active_key_prefixes: ['sk-test-Ab12Cd34'] } },
  RATE_LIMITED: { summary: 'Minute window exhausted (paid key)', fields: { limit: 300, window: 'minute', retry_after: 12 } },
  INSUFFICIENT_CREDITS: { summary: 'Balance or grant quota below the task cost', fields: { required: 10, available: 3 } },
  SPEND_LIMIT_REACHED: { summary: "The creation would take the key's spend past its limit", fields: { limit: 500, period: 'day', spent: 496 } },
  BATCH_EXCEEDS_RATE_LIMIT: {
    summary: 'A trial key (20 requests per minute) sent a batch of 25',
    message: new ApiError('BATCH_EXCEEDS_RATE_LIMIT', { params: { size: 25, limit: 20, window: 'minute' } }).message,
    fields: { limit: 20, window: 'minute' },
  },
  TOO_MANY_LOGIN_ATTEMPTS: { summary: 'Too many attempts from this address, or failures for this e-mail from this address', fields: { retry_after: 840 } },
  INVALID_REQUEST: { summary: 'No JSON body was sent', message: 'Request body must be a JSON object.' },
  INVALID_API_VERSION: {
    summary: 'TaskApi-Version names no version of this API',
    message: 'TaskApi-Version is not a version of this API; the versions are 2026-11-01.',
    fields: { errors: [{ field: 'TaskApi-Version', message: 'TaskApi-Version is not a version of this API; the versions are 2026-11-01' }] },
  },
};

export const ERROR_RESPONSE_NOTES: Partial<Record<ErrorCode, string>> = {
  API_KEY_REQUIRED: `\`X-Api-Key\` absent or blank: \`${API_ERRORS.API_KEY_REQUIRED.message}\``,
  INVALID_API_KEY: `Unknown, malformed or revoked key: \`${API_ERRORS.INVALID_API_KEY.message}\``,
  TRIAL_KEY_EXPIRED: `Trial key whose grant has expired: \`${API_ERRORS.TRIAL_KEY_EXPIRED.message}\` with \`active_key_prefixes\`. Not counted against the rate limit.`,
  RATE_LIMITED:
    'A rate limit of the key is exhausted (paid 300/minute and 100000/day, trial 20/minute and 1000/day by default). Rejected requests are not counted.',
  SPEND_LIMIT_REACHED:
    "The creation would take the key's spend in its current UTC day or month past its `spend_limit`. Answered instead of `Insufficient credits.` when both apply.",
  BATCH_EXCEEDS_RATE_LIMIT: "The batch has more tasks than the key's minute (or day) window can hold even when empty. Not counted; retrying cannot help.",
  SESSION_ONLY: 'The request carries `X-Api-Key` (refused whatever else it carries).',
  LOGIN_REQUIRED: 'No valid session: missing, malformed, forged, expired or logged-out token.',
  CROSS_SITE_REFUSED:
    'A state-changing request authenticated by the `session` cookie did not come from this site (`Sec-Fetch-Site` not `same-origin`/`none`, or, without it, `Origin` not this server). Bearer-token requests are not checked.',
  MALFORMED_REQUEST: 'A path parameter is not valid percent-encoding.',
  INVALID_FIELD: 'The body is invalid; validation errors list every problem in `errors`.',
  INVALID_PARAMETER: 'A query parameter is invalid, unknown or repeated; validation errors list every problem in `errors`.',
  INVALID_REQUEST: 'The body is missing or is not a JSON object.',
  MALFORMED_JSON: 'The body is not valid JSON.',
  BODY_TOO_LARGE: 'The body is over the limit for this endpoint.',
  UNSUPPORTED_ENCODING: 'An unsupported `Content-Encoding` (gzip, deflate and br are accepted) or a charset that is not UTF-8/16/32.',
  CONTENT_TYPE_NOT_JSON: 'A body was sent with a Content-Type other than `application/json`.',
  FILE_LINK_INVALID: 'A signed file link whose `signature` does not match its task, file name and `expires`, or whose `expires` has passed.',
  TOO_MANY_TASK_STREAMS:
    `The account already holds ${MAX_WAITERS_PER_ACCOUNT.toLocaleString('en-US')} open requests on tasks (event streams and \`Prefer: wait\`) ` +
    'on the server that took this one: close one, then retry. `Retry-After: 1`.',
  TASK_STREAMS_UNAVAILABLE: `The server holds its limit of open requests on tasks (${MAX_WAITERS.toLocaleString('en-US')}), or is shutting down; another replica takes the retry. \`Retry-After: 1\`.`,
  INVALID_API_VERSION:
    '`TaskApi-Version` is not a `YYYY-MM-DD` date, or names no version of this API. Checked before authentication, so this ' +
    'answer comes whatever the credentials.',
  INTERNAL: 'Unexpected error, logged with the request id.',
  SERVICE_UNAVAILABLE: 'PostgreSQL or Redis is unreachable (or, for file downloads and uploaded images, the file store). Never an open door: key and session checks fail closed. `Retry-After: 1`.',
};
