// Response headers the API sends, described once; routes list them by name.

interface HeaderObject {
  /** The header's name when it differs from the entry's (two ways to describe `Set-Cookie`). */
  name?: string;
  description: string;
  schema: Record<string, unknown>;
}

export const RESPONSE_HEADERS = {
  'X-Request-Id': {
    description:
      'Id of this request, also in the server logs: the caller\'s own `X-Request-Id` when it matches `^[A-Za-z0-9._:-]{1,128}$`, ' +
      'otherwise a generated `req_...` id. Sent on every response.',
    schema: { type: 'string', example: 'req_4Fg7Hj2Kl9Mn3Bv6Cx1Zq8' },
  },
  'TaskApi-Version': {
    description:
      'The API version (`YYYY-MM-DD`) this answer was shaped by: the request\'s `TaskApi-Version`, else the version pinned to the ' +
      "account, else (answers that belong to no account: 401s, a refused `TaskApi-Version`, unknown paths) the newest. On every /api response.",
    schema: { type: 'string', format: 'date', example: '2026-11-01' },
  },
  'RateLimit-Policy': {
    description:
      'The key type\'s limits (IETF RateLimit header draft): minute window (`w=60`) and day window (`w=86400`), `q` requests each. ' +
      'On every response to a request that passed API-key authentication, including 429.',
    schema: { type: 'string', example: '"minute";q=300;w=60, "day";q=100000;w=86400' },
  },
  RateLimit: {
    description:
      'Remaining requests (`r`) and seconds until more are available (`t`) in the tighter window. On a 429 it names the exceeded ' +
      'window with `r=0` and `t` equal to `Retry-After`.',
    schema: { type: 'string', example: '"minute";r=299;t=60' },
  },
  'Retry-After': {
    description: 'Seconds to wait before retrying.',
    schema: { type: 'integer', minimum: 1, example: 12 },
  },
  Location: {
    description: 'Absolute URL of the created task (`GET /api/tasks/{publicId}`).',
    schema: { type: 'string', format: 'uri', example: 'https://api.example.com/api/tasks/task_3kT9xQ2mLp7Vn4Rb8Yc1Zd' },
  },
  'Idempotent-Replayed': {
    description:
      'Present (`true`) only when this response replays the task created earlier with the same `Idempotency-Key` and body: ' +
      'the task as it was first returned (status 0), charged once.',
    schema: { type: 'string', enum: ['true'] },
  },
  'Preference-Applied': {
    description:
      'Present (`wait=N`, N the seconds actually allowed, at most 60) when the request\'s `Prefer: wait=N` was honoured: the ' +
      'answer came once the task was terminal or after N seconds. Absent when the server could not hold the request ' +
      '(shutting down, too many waiting requests); the task is then returned at once.',
    schema: { type: 'string', example: 'wait=30' },
  },
  'Set-Cookie-Session': {
    name: 'Set-Cookie',
    description:
      'The `session` cookie: the same JWT as `token`, `HttpOnly; SameSite=Strict; Path=/`, 12 hours (`Max-Age=43200`); `Secure` in ' +
      'production or over HTTPS.',
    schema: { type: 'string', example: 'session=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9...; Max-Age=43200; Path=/; HttpOnly; SameSite=Strict' },
  },
  'Set-Cookie-Cleared': {
    name: 'Set-Cookie',
    description: 'Clears the `session` cookie.',
    schema: { type: 'string', example: 'session=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Strict' },
  },
  'Content-Disposition': {
    description: 'Always `inline` with the file name.',
    schema: { type: 'string', example: 'inline; filename="image.png"' },
  },
  'Content-Disposition-Csv': {
    name: 'Content-Disposition',
    description: 'With `Accept: text/csv`: an attachment named after the range and grouping.',
    schema: { type: 'string', example: 'attachment; filename="usage-2026-11-01-to-2026-11-30-by-day.csv"' },
  },
  'Content-Type-File': {
    name: 'Content-Type',
    description: "The file's `content_type`.",
    schema: { type: 'string', example: 'image/png' },
  },
  'Cache-Control-OpenApi': {
    name: 'Cache-Control',
    description: 'The document may be cached for five minutes.',
    schema: { type: 'string', example: 'public, max-age=300' },
  },
  'Content-Range': {
    description: 'The byte range sent, or (416) the size of the file.',
    schema: { type: 'string', example: 'bytes 0-1023/48213' },
  },
  ETag: {
    description: 'Validator of the file for conditional requests.',
    schema: { type: 'string' },
  },
  'Cache-Control-File': {
    name: 'Cache-Control',
    description: 'Files never change once written.',
    schema: { type: 'string', example: 'private, max-age=86400, immutable' },
  },
  'Cache-Control-Stream': {
    name: 'Cache-Control',
    description: 'An event stream is never cached.',
    schema: { type: 'string', example: 'no-cache' },
  },
  'X-Accel-Buffering': {
    description: 'Tells nginx (and proxies that honour it) not to buffer the stream, so each event goes out as it is sent.',
    schema: { type: 'string', example: 'no' },
  },
} satisfies Record<string, HeaderObject>;

export type ResponseHeader = keyof typeof RESPONSE_HEADERS;
