/**
 * Every error the API can answer with: one closed set of codes, each with its HTTP status, its
 * message and whether retrying the same request can succeed. The messages promised to integrators
 * word for word (docs/api.md) live here and nowhere else. Code below `domain/` throws `ApiError(code)`; only the error
 * middleware (`http/error-handler.ts`) turns one into a response.
 */

interface ErrorSpec<P = undefined> {
  status: number;
  /** A fixed message, or one built from the throw site's parameters (validation details). */
  message: string | ((params: P) => string);
  /** True when the same request may succeed later (the SDK retries these). */
  retryable: boolean;
  /** Seconds for `Retry-After` when the error does not carry its own `retry_after`. */
  retryAfter?: number;
  /**
   * A validation failure about one input: the body lists it in `errors` (docs/architecture.md,
   * hostile input) — that input's name, or `true` for the `name` the throw site gives.
   */
  field?: string | true;
}

const fixed = <M extends string>(status: number, message: M, retryable = false) => ({ status, message, retryable }) satisfies ErrorSpec;
const built = <P>(status: number, message: (params: P) => string): ErrorSpec<P> => ({ status, message, retryable: false });
/** A 400 about one input; `field: true` when the throw site names it (`params.name`). */
const invalid = <P = undefined>(field: string | true, message: string | ((params: P) => string)): ErrorSpec<P> => ({
  status: 400,
  message,
  retryable: false,
  field,
});

/** A field, parameter or argument that failed a rule, as `Invalid field "x": <problem>.` */
interface Problem {
  name: string;
  /** What is wrong, starting lower-case, without a final period: `must be an https:// URL`. */
  problem: string;
}

export const API_ERRORS = {
  // Authentication and rate limits (docs/api.md).
  API_KEY_REQUIRED: fixed(401, 'API key required.'),
  INVALID_API_KEY: fixed(401, 'Invalid API key.'),
  TRIAL_KEY_EXPIRED: fixed(401, 'This trial API key has expired.'),
  RATE_LIMITED: fixed(429, 'Rate limit exceeded.', true),
  /** A batch that needs more requests than the key's window holds when empty: retrying cannot help. */
  BATCH_EXCEEDS_RATE_LIMIT: built<{ size: number; limit: number; window: 'minute' | 'day' }>(
    429,
    (p) => `This batch of ${p.size} tasks is larger than this key's rate limit of ${p.limit} requests per ${p.window} can ever hold; send at most ${p.limit} tasks per batch.`,
  ),
  SESSION_ONLY: fixed(401, 'This endpoint requires a login session. API keys are not accepted.'),
  LOGIN_REQUIRED: fixed(401, 'Login required.'),
  CROSS_SITE_REFUSED: fixed(403, 'Cross-site request refused.'),
  INVALID_CREDENTIALS: fixed(401, 'Invalid email or password.'),
  TOO_MANY_LOGIN_ATTEMPTS: fixed(429, 'Too many login attempts. Try again later.', true),
  OPERATOR_LOGIN_REQUIRED: fixed(401, 'Operator credentials required.'),
  // Browser read tokens (docs/api.md, "Browser read tokens").
  READ_TOKEN_REQUIRED: fixed(401, 'Read token required.'),
  INVALID_READ_TOKEN: fixed(401, 'Invalid read token.'),
  READ_TOKEN_EXPIRED: fixed(401, 'This read token has expired.'),
  OPERATOR_LOGIN_DISABLED: fixed(403, 'Bull Board is disabled: set ADMIN_USER and ADMIN_PASSWORD.'),

  // Tasks (docs/api.md).
  TASK_NOT_FOUND: fixed(404, 'Task not found.'),
  TASK_ALREADY_FINISHED: fixed(409, 'Task is already finished.'),
  FILE_NOT_FOUND: fixed(404, 'File not found.'),
  FILES_EXPIRED: fixed(410, 'The files of this task have expired.'),
  FILE_LINK_INVALID: fixed(403, 'This file link is invalid or has expired.'),
  INSUFFICIENT_CREDITS: fixed(402, 'Insufficient credits.'),
  SPEND_LIMIT_REACHED: fixed(402, "This key's spend limit is reached."),
  IDEMPOTENCY_KEY_REUSED: fixed(409, 'This Idempotency-Key was already used with a different request.'),
  INVALID_IDEMPOTENCY_KEY: invalid('Idempotency-Key', 'Idempotency-Key must be 1 to 255 printable ASCII characters.'),
  /** `TaskApi-Version` malformed or naming no version (docs/api.md, "Versions"); checked before authentication. */
  INVALID_API_VERSION: invalid<{ problem: string }>('TaskApi-Version', (p) => `TaskApi-Version ${p.problem}.`),
  UNKNOWN_CURSOR: invalid('cursor', 'cursor is not a position in this list; use next_cursor from a previous page.'),
  /** The account holds its limit of open task requests (event streams and `Prefer: wait`) on this server. */
  TOO_MANY_TASK_STREAMS: { ...fixed(429, 'Too many open task event streams and waiting requests for this account. Close one and retry.', true), retryAfter: 1 },
  /** This server holds its limit of open task requests, or is shutting down: another replica can take the stream. */
  TASK_STREAMS_UNAVAILABLE: { ...fixed(503, 'This server cannot open a task event stream right now. Please retry shortly.', true), retryAfter: 1 },

  // Keys, grants and webhook deliveries (console).
  KEY_NOT_FOUND: fixed(404, 'API key not found.'),
  KEY_NOT_ACTIVE: fixed(409, 'Only active keys can be revealed.'),
  KEY_REVOKED_NO_REISSUE: fixed(409, 'This key is revoked; create a new key instead.'),
  KEY_REVOKED_NO_EDIT: fixed(409, 'This key is revoked; its spend limit cannot be changed.'),
  GRANT_NOT_FOUND: fixed(404, 'Trial grant not found.'),
  GRANT_EXPIRED: fixed(422, 'This trial grant has expired.'),
  GRANT_EXHAUSTED: fixed(422, 'This trial grant has no remaining quota.'),
  GRANT_ALREADY_BOUND: fixed(409, 'This trial grant already has an active key. Revoke or reissue that key instead.'),
  DELIVERY_NOT_FOUND: fixed(404, 'Delivery not found.'),
  DELIVERY_PENDING: fixed(409, 'Delivery is still pending; wait for its next attempt or for it to finish.'),

  // Accounts (operator CLI).
  ACCOUNT_EXISTS: fixed(409, 'An account with this e-mail already exists.'),
  ACCOUNT_NOT_FOUND: fixed(404, 'No account with this e-mail.'),
  INVALID_ARGUMENT: built<Problem>(400, (p) => `${p.name} ${p.problem}.`),

  // Request shape: bodies, fields, query parameters.
  /** A body field: `prompt is required.` */
  INVALID_FIELD: invalid<Problem>(true, (p) => `${p.name} ${p.problem}.`),
  /** A query parameter or header: `limit must be at most 100.` */
  INVALID_PARAMETER: invalid<Problem>(true, (p) => `${p.name} ${p.problem}.`),
  /** A value PostgreSQL refused although it passed validation (out of range for its column, say). */
  UNSTORABLE_VALUE: fixed(400, 'A value in the request cannot be stored; check its characters and size.'),
  /** The body or query as a whole (`Request body must be a JSON object.`). */
  INVALID_REQUEST: invalid<Problem>(true, (p) => `${p.name} ${p.problem}.`),
  MALFORMED_JSON: fixed(400, 'Malformed JSON body.'),
  BODY_UNREADABLE: fixed(400, 'The request body could not be read.'),
  BODY_TOO_LARGE: built<{ limit: number | undefined }>(413, (p) => `Request body too large (limit ${p.limit ?? 'exceeded'} bytes).`),
  CONTENT_TYPE_NOT_JSON: fixed(415, 'Content-Type must be application/json.'),
  UNSUPPORTED_ENCODING: fixed(415, 'Unsupported body encoding; send UTF-8 JSON.'),
  /** A request the HTTP layer could not take apart (an undecodable path parameter, a bad Range). */
  MALFORMED_REQUEST: fixed(400, 'Malformed request.'),
  NOT_FOUND: fixed(404, 'Not found.'),

  // The service itself.
  SERVICE_UNAVAILABLE: { ...fixed(503, 'Service temporarily unavailable. Please retry shortly.', true), retryAfter: 1 },
  INTERNAL: fixed(500, 'Internal server error.', true),
} satisfies Record<string, ErrorSpec<never>>;

export type ErrorCode = keyof typeof API_ERRORS;

type BuildsMessage<C extends ErrorCode> = Extract<(typeof API_ERRORS)[C]['message'], (params: never) => string>;
type ParamsOf<C extends ErrorCode> =
  [BuildsMessage<C>] extends [never] ? undefined : BuildsMessage<C> extends (params: infer P) => string ? P : undefined;

/** The codes whose message needs no parameters from the throw site. */
export type FixedCode = { [C in ErrorCode]: ParamsOf<C> extends undefined ? C : never }[ErrorCode];

interface ErrorOptions {
  /** Extra top-level fields of the JSON body, next to `message` (`required`, `retry_after`, `errors`…). */
  fields?: Record<string, unknown>;
  cause?: unknown;
  /** Only for errors relayed from the HTTP stack, which carry their own 4xx status. */
  status?: number;
}

type ErrorArgs<C extends ErrorCode> =
  ParamsOf<C> extends undefined ? [options?: ErrorOptions] : [options: ErrorOptions & { params: ParamsOf<C> }];

/** An error with a stable code; its message is sent as-is, so it never carries secrets or internals. */
export class ApiError<C extends ErrorCode = ErrorCode> extends Error {
  override name = 'ApiError';
  readonly status: number;
  readonly retryable: boolean;
  readonly fields: Record<string, unknown>;

  constructor(
    readonly code: C,
    ...[options]: ErrorArgs<C>
  ) {
    const spec: ErrorSpec<never> = API_ERRORS[code];
    const params = options && 'params' in options ? options.params : undefined;
    super(typeof spec.message === 'string' ? spec.message : (spec.message as (p: unknown) => string)(params), { cause: options?.cause });
    this.status = options?.status ?? spec.status;
    this.retryable = spec.retryable;
    this.fields = options?.fields ?? {};
    if (spec.field !== undefined && this.fields.errors === undefined) {
      const field = spec.field === true ? (params as Problem).name : spec.field;
      this.fields = { ...this.fields, errors: [{ field, message: this.message.replace(/\.$/, '') }] };
    }
  }

  /** Seconds for `Retry-After`, when the answer should carry one. */
  get retryAfter(): number | undefined {
    const own = this.fields.retry_after;
    const spec: ErrorSpec<never> = API_ERRORS[this.code];
    return typeof own === 'number' ? own : spec.retryAfter;
  }

  /** The JSON body: `message` and the error's fields. */
  body(): Record<string, unknown> {
    return { message: this.message, ...this.fields };
  }
}

/** PostgreSQL, Redis or the file store is unreachable: never an open door, never a 500. */
export function unavailable(dependency: 'redis' | 'database' | 'storage', cause?: unknown): ApiError<'SERVICE_UNAVAILABLE'> {
  return new ApiError('SERVICE_UNAVAILABLE', { cause: { dependency, error: cause } });
}
