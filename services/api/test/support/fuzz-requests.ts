// Request generators for the fuzz suite, derived from the route registry: each route's zod request
// schemas (as JSON Schema) give values that are valid, nearly valid or hostile, so most requests
// get past authentication and into validation and the handlers, and some reach the database.
import fc from 'fast-check';
import { z } from 'zod';
import type { Route } from '../../src/http/route';

export interface FuzzRequest {
  route: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  /** Bytes to send (JSON text, or something that is not). */
  body?: string | Buffer;
  /** Which credentials to attach: the harness fills them in. */
  auth: 'valid' | 'none' | 'bogus';
  /** Sent last, so they may replace the credentials. */
  extraHeaders?: Record<string, string>;
}

/** Real ids the fuzzer can aim at, per path parameter name (`publicId`, `keyId`, …). */
export type KnownIds = Record<string, readonly string[]>;

type JsonSchema = {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  enum?: unknown[];
  const?: unknown;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  allOf?: JsonSchema[];
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  format?: string;
  example?: unknown;
  examples?: unknown[];
  default?: unknown;
  $ref?: string;
  $defs?: Record<string, JsonSchema>;
};

/** Text PostgreSQL cannot store, control characters, markup, and the other usual suspects. */
const HOSTILE_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\ud800',
  'x\udfff',
  '\ud83d\ude00',
  '\uFEFF',
  '\r\n\t',
  '%00',
  '../../etc/passwd',
  '<script>alert(1)</script>',
  "'; DROP TABLE tasks; --",
  '${jndi:ldap://x}',
  'https://',
  'https://127.0.0.1/',
  'https://[::1]/',
  'https://example.com/\u0000',
  'javascript:alert(1)',
  'task_',
  'key_aaaaaaaaaaaaaaaaaaaaaa',
  '9'.repeat(400),
  '-1',
  '1e309',
  'NaN',
  'true',
  'null',
  '[]',
  '{}',
  'é'.repeat(3000),
  'x'.repeat(70_000),
];

const HOSTILE_NUMBERS = [0, -1, -0, 1.5, 1e308, -1e308, 2 ** 53 + 2, 2 ** 31, -(2 ** 31) - 1, 2 ** 63, 4.9e-324];

/** A JSON value nested `depth` levels deep (arrays or objects). */
function nested(depth: number, objects: boolean): unknown {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = objects ? { a: v } : [v];
  return v;
}

const wrongTypes: fc.Arbitrary<unknown> = fc.oneof(
  fc.constant(null),
  fc.boolean(),
  fc.constantFrom(...HOSTILE_NUMBERS),
  fc.constantFrom(...HOSTILE_STRINGS),
  fc.constant([]),
  fc.constant({}),
  fc.jsonValue({ maxDepth: 3 }),
  fc.constantFrom(10, 70, 2_000).chain((d) => fc.constantFrom(nested(d, true), nested(d, false))),
);

const anyString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(...HOSTILE_STRINGS),
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'binary', maxLength: 20 }),
  fc.string({ unit: 'grapheme', maxLength: 20 }),
);

/** `arb` once in `oneIn` draws, else null. */
function rarely<T>(arb: fc.Arbitrary<T>, oneIn: number): fc.Arbitrary<T | null> {
  return fc.oneof({ arbitrary: fc.constant(null), weight: oneIn - 1 }, { arbitrary: arb, weight: 1 });
}

function resolve(schema: JsonSchema, root: JsonSchema): JsonSchema {
  if (!schema.$ref) return schema;
  const name = schema.$ref.replace(/^#\/\$defs\//, '');
  return root.$defs?.[name] ?? {};
}

/** A value that satisfies (or nearly satisfies) `schema`, with a fair share of hostile ones. */
function valueFor(schemaIn: JsonSchema, root: JsonSchema, ids: readonly string[], depth = 0): fc.Arbitrary<unknown> {
  const schema = resolve(schemaIn, root);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((s) => valueFor(s, root, ids, depth + 1)));
  if (schema.allOf?.length) return valueFor(schema.allOf[0]!, root, ids, depth + 1);
  const good: fc.Arbitrary<unknown>[] = [];
  if (schema.enum) good.push(fc.constantFrom(...schema.enum));
  if (schema.const !== undefined) good.push(fc.constant(schema.const));
  if (schema.example !== undefined) good.push(fc.constant(schema.example));
  if (schema.examples?.length) good.push(fc.constantFrom(...schema.examples));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string':
      if (schema.pattern && ids.length) good.push(fc.constantFrom(...ids));
      good.push(fc.string({ minLength: Math.min(schema.minLength ?? 1, 40), maxLength: Math.min(schema.maxLength ?? 40, 40) }));
      break;
    case 'integer':
    case 'number': {
      const min = schema.minimum ?? -1000;
      const max = schema.maximum ?? 1_000_000;
      good.push(fc.integer({ min: Math.ceil(min), max: Math.floor(max) }));
      break;
    }
    case 'boolean':
      good.push(fc.boolean());
      break;
    case 'array':
      if (depth < 3) good.push(fc.array(valueFor(schema.items ?? {}, root, ids, depth + 1), { maxLength: 4 }));
      break;
    case 'object':
      if (depth < 3 && schema.properties) good.push(objectFor(schema, root, ids, depth + 1));
      break;
    default:
      good.push(fc.jsonValue({ maxDepth: 2 }));
  }
  // Too deep for the structure (a batch's items' members): any small JSON value.
  if (good.length === 0) good.push(fc.jsonValue({ maxDepth: 1 }));
  // Mostly good values, so requests get past validation; the rest probe it.
  return fc.oneof({ arbitrary: fc.oneof(...good), weight: 3 }, { arbitrary: wrongTypes, weight: 1 }, { arbitrary: anyString, weight: 1 });
}

/** An object of the schema's properties: required ones mostly there, optional ones sometimes, now and then a stranger. */
function objectFor(schema: JsonSchema, root: JsonSchema, ids: readonly string[], depth: number): fc.Arbitrary<Record<string, unknown>> {
  const props = schema.properties ?? {};
  const required = new Set(schema.required ?? []);
  const entries = Object.entries(props).map(([name, prop]) =>
    fc.tuple(fc.constant(name), valueFor(prop, root, ids, depth), fc.integer({ min: 0, max: 9 })),
  );
  return fc
    .tuple(fc.tuple(...entries), rarely(fc.tuple(anyString, wrongTypes), 8))
    .map(([values, stranger]) => {
      const out: Record<string, unknown> = {};
      for (const [name, value, roll] of values) {
        if (required.has(name) ? roll > 0 : roll > 4) out[name] = value;
      }
      if (stranger) out[stranger[0]] = stranger[1];
      return out;
    });
}

function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
}

const CONTENT_TYPES = [
  'application/json',
  'application/json; charset=utf-8',
  'application/json; charset=UTF-8',
  'application/json; charset=utf-16',
  'application/json; charset=latin1',
  'application/json; charset=',
  'application/json;;;',
  'APPLICATION/JSON',
  'application/vnd.api+json',
  'text/plain',
  'text/html; charset=utf-8',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/octet-stream',
];

const ENCODINGS = ['identity', 'gzip', 'deflate', 'br', 'x-unknown', 'gzip, gzip'];

/** Headers an attacker adds or mangles: credentials, cookies, forwarding, ranges, sheer length. */
const EXTRA_HEADERS: ReadonlyArray<Record<string, string>> = [
  { cookie: 'session=%00' },
  { cookie: `session=${'a'.repeat(5000)}` },
  { cookie: 'session=eyJhbGciOiJIUzI1NiJ9.e30.x; session=second' },
  { cookie: '=; ; session' },
  { authorization: 'Bearer ' },
  { authorization: 'Basic Zm9vOmJhcg==' },
  { authorization: `Bearer ${'x'.repeat(5000)}` },
  { authorization: 'Bearer a.b.c' },
  { 'x-api-key': '' },
  { 'x-api-key': 'sk-live-' },
  { 'x-api-key': `sk-test-${'A'.repeat(500)}` },
  { 'x-api-key': 'sk-live-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA, sk-live-BBBB' },
  { 'x-forwarded-for': '1.2.3.4, ::1, garbage, [::1]:80' },
  { range: 'bytes=0-1,5-2' },
  { range: 'bytes=-0' },
  { 'if-none-match': '*' },
  { 'if-modified-since': 'yesterday' },
  { 'accept-encoding': 'gzip;q=x' },
  { accept: 'text/html' },
  { 'x-padding': 'x'.repeat(12_000) },
  { 'sec-fetch-site': 'cross-site', origin: 'https://evil.example' },
];

/** A body as bytes: JSON of the value, or something that only looks like it. */
function bodyBytes(value: fc.Arbitrary<unknown>): fc.Arbitrary<string | Buffer> {
  return fc.oneof(
    { arbitrary: value.map((v) => JSON.stringify(v) ?? 'null'), weight: 12 },
    {
      arbitrary: fc.constantFrom(
        '{',
        '{"a":',
        'nul',
        '\u0000',
        '{"a":1}{"b":2}',
        '[1,2,]',
        '{"__proto__":{"x":1}}',
        '{"constructor":{"prototype":{"x":1}}}',
        '{"prompt":"p","__proto__":{"isAdmin":true}}',
        '{"a":1,"a":2}',
      ),
      weight: 1,
    },
    { arbitrary: fc.constantFrom(Buffer.from([0xff, 0xfe, 0x7b, 0x00]), Buffer.from([0xc0, 0x80]), Buffer.from('{"prompt":"\xed\xa0\x80"}', 'latin1')), weight: 1 },
    // Nesting far deeper than JSON.stringify could produce.
    { arbitrary: fc.constantFrom('['.repeat(50_000) + ']'.repeat(50_000), `{"prompt":"p","payload":${'{"a":'.repeat(20_000)}1${'}'.repeat(20_000)}}`), weight: 1 },
  );
}

/** Percent-encodes any string, lone surrogates included (as the bytes UTF-8 would send for them). */
function encodeSegment(value: string): string {
  try {
    return encodeURIComponent(value);
  } catch {
    return [...Buffer.from(value, 'utf8')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('');
  }
}

/** A path parameter: a real id, a near miss, or something an attacker would type. */
function paramValue(ids: readonly string[]): fc.Arbitrary<string> {
  return fc.oneof(
    { arbitrary: ids.length ? fc.constantFrom(...ids).map(encodeSegment) : fc.constant('x'), weight: 6 },
    { arbitrary: anyString.map(encodeSegment), weight: 2 },
    { arbitrary: fc.constantFrom('%00', '%ZZ', '%E0%A4%A', '..%2F..%2Fetc', '%2e%2e', '%ED%A0%80', 'x'.repeat(5000), '%25', '%'), weight: 2 },
  );
}

/** Requests for one route of the registry. */
export function requestsFor(route: Route, ids: KnownIds): fc.Arbitrary<FuzzRequest> {
  const paramNames = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
  const params = fc.tuple(...paramNames.map((name) => paramValue(ids[name] ?? [])));
  const query = route.query ? objectFor(jsonSchemaOf(route.query), jsonSchemaOf(route.query), [], 0) : fc.constant({});
  const bodySchema = route.body ? jsonSchemaOf(route.body.schema) : undefined;
  // A body nearly always; now and then none at all.
  const body = bodySchema ? fc.option(bodyBytes(valueFor(bodySchema, bodySchema, ids.publicId ?? [])), { freq: 10 }) : fc.constant(null);
  const contentType = fc.oneof({ arbitrary: fc.constant('application/json'), weight: 6 }, { arbitrary: fc.constantFrom(...CONTENT_TYPES), weight: 2 });
  const encoding = rarely(fc.constantFrom(...ENCODINGS), 12);
  const idempotencyKey = rarely(fc.oneof(fc.string({ minLength: 1, maxLength: 40 }), fc.constantFrom('x'.repeat(300), ' ', 'ключ')), 3);
  const auth = fc.oneof({ arbitrary: fc.constant('valid' as const), weight: 18 }, { arbitrary: fc.constantFrom('none' as const, 'bogus' as const), weight: 1 });
  const extra = rarely(fc.constantFrom(...EXTRA_HEADERS), 8);
  const repeatQueryKey = fc.boolean();
  return fc.record({ params, query, body, contentType, encoding, idempotencyKey, auth, extra, repeatQueryKey }).map((r) => {
    let path = route.path;
    paramNames.forEach((name, i) => (path = path.replace(`{${name}}`, r.params[i]!)));
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(r.query)) search.append(k, typeof v === 'string' ? v : JSON.stringify(v) ?? '');
    // `?a=1&a=2` arrives as an array.
    const first = [...search.entries()][0];
    if (r.repeatQueryKey && first) search.append(first[0], first[1]);
    const qs = search.toString();
    const headers: Record<string, string> = {};
    if (r.body !== null) headers['content-type'] = r.contentType;
    if (r.body !== null && r.encoding !== null) headers['content-encoding'] = r.encoding;
    if (r.idempotencyKey !== null && /^[\t\x20-\x7e\x80-\xff]*$/.test(r.idempotencyKey)) headers['idempotency-key'] = r.idempotencyKey;
    return {
      route: route.operationId,
      method: route.method.toUpperCase(),
      path: qs ? `${path}?${qs}` : path,
      headers,
      body: r.body ?? undefined,
      auth: r.auth,
      extraHeaders: r.extra ?? undefined,
    };
  });
}

/** Paths outside the registry: console pages, docs, Bull Board, the unknown. */
export const strayRequests: fc.Arbitrary<FuzzRequest> = fc
  .tuple(
    fc.constantFrom('/app', '/app/', '/app/tasks/', '/app/api-keys', '/docs', '/docs/', '/admin/queues', '/api', '/api/', '/', '/app/assets/', '/api/tasks/', '/api/console/tasks/'),
    fc.oneof(anyString.map(encodeSegment), fc.constantFrom('%00', '%ZZ', '..%2f', '%ED%A0%80', '', 'x'.repeat(3000))),
    fc.constantFrom('GET', 'POST', 'HEAD', 'PUT', 'DELETE', 'OPTIONS', 'PATCH'),
  )
  .map(([base, rest, method]) => ({ route: 'stray', method, path: `${base}${rest}`, headers: {}, auth: 'valid' as const }));
