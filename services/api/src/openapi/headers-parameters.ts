// Reusable header and parameter components.
import { schema, type OpenApiObject } from './refs';

export const headerComponents: Record<string, OpenApiObject> = {
  'X-Request-Id': {
    description:
      'Id of this request, also in the server logs: the caller\'s own `X-Request-Id` when it matches `^[A-Za-z0-9._:-]{1,128}$`, ' +
      'otherwise a generated `req_...` id. Sent on every response.',
    schema: { type: 'string', example: 'req_4Fg7Hj2Kl9Mn3Bv6Cx1Zq8' },
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
  'Set-Cookie-Session': {
    description:
      'The `session` cookie: the same JWT as `token`, `HttpOnly; SameSite=Strict; Path=/`, 12 hours (`Max-Age=43200`); `Secure` in ' +
      'production or over HTTPS.',
    schema: { type: 'string', example: 'session=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9...; Max-Age=43200; Path=/; HttpOnly; SameSite=Strict' },
  },
  'Set-Cookie-Cleared': {
    description: 'Clears the `session` cookie.',
    schema: { type: 'string', example: 'session=; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Strict' },
  },
  'Content-Disposition': {
    description: 'Always `inline` with the file name.',
    schema: { type: 'string', example: 'inline; filename="image.png"' },
  },
  'Cache-Control-File': {
    description: 'Files never change once written.',
    schema: { type: 'string', example: 'private, max-age=86400, immutable' },
  },
};

export const parameterComponents: Record<string, OpenApiObject> = {
  PublicId: {
    name: 'publicId',
    in: 'path',
    required: true,
    description: "The task's `public_id`. A malformed id, an unknown id and another account's task all give 404 `Task not found.`",
    schema: { type: 'string', pattern: '^task_[A-Za-z0-9]{22}$', example: 'task_3kT9xQ2mLp7Vn4Rb8Yc1Zd' },
  },
  FileName: {
    name: 'name',
    in: 'path',
    required: true,
    description: 'A `name` from the task\'s `files`.',
    schema: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$', example: 'image.png' },
  },
  KeyId: {
    name: 'keyId',
    in: 'path',
    required: true,
    description: "The key's `id`. A malformed id, an unknown id and another account's key all give 404 `API key not found.`",
    schema: { type: 'string', pattern: '^key_[A-Za-z0-9]{22}$', example: 'key_5Jd8Qw2Er6Ty1Ui9Op3As7' },
  },
  DeliveryId: {
    name: 'deliveryId',
    in: 'path',
    required: true,
    description: "The delivery's `id`. A malformed id, an unknown id and another account's delivery all give 404 `Delivery not found.`",
    schema: { type: 'string', pattern: '^whd_[A-Za-z0-9]{22}$', example: 'whd_8Hs2Kd9Lq4Wm1Xn7Bv3Cz6' },
  },
  DeliveryTaskFilter: {
    name: 'public_id',
    in: 'query',
    required: false,
    description: 'Only the deliveries of this task.',
    schema: { type: 'string', maxLength: 64, example: 'task_3kT9xQ2mLp7Vn4Rb8Yc1Zd' },
  },
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Makes creation safe to retry: the same key with the same body (same kind; key order and whitespace do not matter) within ' +
      '24 hours returns the first task again with `Idempotent-Replayed: true` and charges once; the same key with a different ' +
      'body gives 409. Keys are per account. 1 to 255 printable ASCII characters, else 400.',
    schema: { type: 'string', pattern: '^[\\x21-\\x7e]{1,255}$', example: 'order-A-1001-render' },
  },
  StatusFilter: {
    name: 'status',
    in: 'query',
    required: false,
    description: 'Only tasks with these statuses: one or more of `0`, `10`, `20`, `30`, `40`, comma-separated (e.g. `0,10`).',
    schema: { type: 'string', pattern: '^\\s*(0|10|20|30|40)\\s*(,\\s*(0|10|20|30|40)\\s*)*$', example: '20,30' },
  },
  KindFilter: {
    name: 'kind',
    in: 'query',
    required: false,
    description: 'Only tasks of this kind.',
    schema: schema('TaskKind'),
  },
  Limit: {
    name: 'limit',
    in: 'query',
    required: false,
    description: 'Page size.',
    schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
  },
  Cursor: {
    name: 'cursor',
    in: 'query',
    required: false,
    description: '`next_cursor` of the previous page.',
    schema: { type: 'string', pattern: '^task_[A-Za-z0-9]{22}$' },
  },
  KeyTypeFilter: {
    name: 'type',
    in: 'query',
    required: false,
    description: 'Only keys of this type.',
    schema: { type: 'string', enum: ['paid', 'trial'] },
  },
};
