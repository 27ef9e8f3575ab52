// Example bodies, mostly error bodies with the exact messages the API sends (DESIGN §3–6 and the code).
import type { OpenApiObject } from './refs';

const msg = (summary: string, message: string, extra: OpenApiObject = {}): OpenApiObject => ({
  summary,
  value: { message, ...extra },
});

const invalid = (summary: string, field: string, problem: string): OpenApiObject =>
  msg(summary, field === '(body)' ? `Request body ${problem}.` : `Invalid field "${field}": ${problem}.`, {
    errors: [{ field, message: problem }],
  });

const invalidParam = (summary: string, field: string, problem: string): OpenApiObject =>
  msg(summary, `Invalid parameter "${field}": ${problem}.`, { errors: [{ field, message: problem }] });

export const examples: Record<string, OpenApiObject> = {
  // Authentication by API key (DESIGN §3).
  ApiKeyRequired: msg('X-Api-Key absent or empty', 'API key required.'),
  InvalidApiKey: msg('Key unknown, malformed or revoked', 'Invalid API key.'),
  TrialKeyExpired: msg("Trial key whose grant expired; the account's other working trial keys", 'This trial API key has expired.', {
    active_key_prefixes: ['sk-test-Ab12Cd34'],
  }),
  // Rate limits (DESIGN §6).
  RateLimitedMinute: msg('Minute window exhausted (paid key)', 'Rate limit exceeded.', { limit: 300, window: 'minute', retry_after: 12 }),
  RateLimitedDay: msg('Day window exhausted (trial key)', 'Rate limit exceeded.', { limit: 1000, window: 'day', retry_after: 1800 }),
  // Task API (DESIGN §4).
  InsufficientCredits: msg('Balance or grant quota below the task cost', 'Insufficient credits.', { required: 10, available: 3 }),
  IdempotencyKeyReused: msg('Same Idempotency-Key, different body', 'This Idempotency-Key was already used with a different request.'),
  TaskNotFound: msg("Unknown id, malformed id, or another account's task", 'Task not found.'),
  FileNotFound: msg('The task has no such file', 'File not found.'),
  TaskAlreadyFinished: msg('The task is completed, failed or cancelled', 'Task is already finished.'),
  EmptyBody: msg('No JSON body was sent', 'Request body must be a JSON object.'),
  BodyNotObject: invalid('The body is JSON but not an object', '(body)', 'must be a JSON object'),
  MalformedJson: msg('The body is not valid JSON (or its top level is not an object or array)', 'Malformed JSON body.'),
  PromptEmpty: invalid('prompt is blank', 'prompt', 'must not be empty'),
  PromptTooLong: invalid('prompt over 2000 characters', 'prompt', 'must be at most 2000 characters'),
  DurationOutOfRange: invalid('duration_seconds out of range', 'duration_seconds', 'must be an integer from 1 to 10'),
  WidthOutOfRange: invalid('width out of range', 'width', 'must be an integer from 64 to 1024'),
  UnknownField: invalid('A field the endpoint does not know', 'colour', 'is not a known field'),
  CallbackNotHttps: invalid('callback_url is not https', 'callback_url', 'must be an https:// URL'),
  ImageSourceRequired: invalid('Neither or both of image_url and image_base64', 'image_url', 'exactly one of image_url or image_base64 is required'),
  ImageUrlNotHttps: invalid('image_url is not https', 'image_url', 'must be an https:// URL'),
  ImageNotBase64: msg('image_base64 is not base64', 'Invalid field "image_base64": must be base64-encoded image data.'),
  ImageTooLarge: msg('Decoded image over 8 MiB', 'Invalid field "image_base64": the image must be at most 8 MiB.'),
  ImageNotJpegOrPng: msg('Decoded image is neither JPEG nor PNG', 'Invalid field "image_base64": must be a JPEG or PNG image.'),
  PayloadTooLarge: msg('payload over 64 KiB of JSON', 'Invalid field "payload": must be at most 65536 bytes of JSON.'),
  InvalidIdempotencyKey: msg('Idempotency-Key malformed', 'Idempotency-Key must be 1 to 255 printable ASCII characters.'),
  InvalidStatusParam: invalidParam('status has a value outside 0,10,20,30,40', 'status', 'must be one or more of 0, 10, 20, 30, 40, comma-separated'),
  InvalidKindParam: invalidParam('kind is not a task kind', 'kind', 'must be one of video-generation, image-generation, face-detection'),
  InvalidLimitParam: invalidParam('limit out of range', 'limit', 'must be an integer from 1 to 100'),
  InvalidCursorParam: invalidParam('cursor is not shaped like a task id', 'cursor', 'must be a next_cursor value from a previous page'),
  RepeatedParam: invalidParam('A query parameter given twice', 'limit', 'must be given once'),
  UnknownParam: invalidParam('An unknown query parameter', 'page', 'is not a known field'),
  UnknownCursor: msg('cursor names no task of this account', 'Invalid parameter "cursor": no such position; use next_cursor from a previous page.'),
  MalformedRequest: msg('A path parameter that is not valid percent-encoding', 'Malformed request.'),
  BodyTooLarge1MiB: msg('Over the 1 MiB body limit', 'Request body too large (limit 1048576 bytes).'),
  BodyTooLargeFace: msg('Over the face-detection body limit', 'Request body too large (limit 11446955 bytes).'),
  BodyTooLarge16KiB: msg('Over the 16 KiB body limit', 'Request body too large (limit 16384 bytes).'),
  ContentTypeNotJson: msg('A body with another Content-Type', 'Content-Type must be application/json.'),
  UnsupportedEncoding: msg('An unsupported Content-Encoding (gzip, deflate and br are accepted) or a non-UTF charset', 'Unsupported body encoding; send UTF-8 JSON.'),
  // Console sessions (DESIGN §3, §5).
  SessionOnly: msg('The request carries X-Api-Key', 'This endpoint requires a login session. API keys are not accepted.'),
  LoginRequired: msg('No, invalid, expired or logged-out session', 'Login required.'),
  CrossSiteRefused: msg('Cookie-authenticated state change from another origin', 'Cross-site request refused.'),
  InvalidCredentials: msg('Unknown e-mail or wrong password', 'Invalid email or password.'),
  TooManyLoginAttempts: msg('Too many attempts from this IP or failures for this e-mail', 'Too many login attempts. Try again later.', {
    retry_after: 840,
  }),
  LoginEmailMissing: invalid('email missing', 'email', 'must be a string'),
  KeyNotFound: msg("Unknown id, malformed id, or another account's key", 'API key not found.'),
  GrantNotFound: msg("Unknown grant or another account's grant", 'Trial grant not found.'),
  GrantExpired: msg('The trial grant has expired', 'This trial grant has expired.'),
  GrantExhausted: msg('The trial grant has no quota left', 'This trial grant has no remaining quota.'),
  GrantAlreadyBound: msg('The grant already has an unrevoked key', 'This trial grant already has an active key. Revoke or reissue that key instead.'),
  DeliveryNotFound: msg("Unknown id, malformed id, or another account's delivery", 'Delivery not found.'),
  DeliveryPending: msg('The delivery still has attempts scheduled', 'Delivery is still pending; wait for its next attempt or for it to finish.'),
  KeyNotActive: msg('The key is revoked or its grant expired', 'Only active keys can be revealed.'),
  KeyRevokedNoReissue: msg('The key is already revoked', 'This key is revoked; create a new key instead.'),
  InvalidKeyType: invalid('type is neither "paid" nor "trial"', 'type', 'must be "paid" or "trial"'),
  GrantIdRequired: invalid('Trial key without grant_id', 'grant_id', 'is required for trial keys'),
  GrantIdMalformed: invalid('grant_id not shaped like a grant id', 'grant_id', 'is not a trial grant id'),
  InvalidKeyTypeParam: invalidParam('type filter is neither "paid" nor "trial"', 'type', 'must be "paid" or "trial"'),
  // Everywhere.
  ServiceUnavailable: msg('PostgreSQL or Redis unreachable', 'Service temporarily unavailable. Please retry shortly.'),
  InternalError: msg('An unexpected error (logged with the request id)', 'Internal server error.'),
};
