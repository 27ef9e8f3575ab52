// Builds the OpenAPI 3.1 document from the route registry: paths and parameters from each route's
// declaration, JSON Schemas from its zod schemas, error responses and their exact messages from the
// error table. Nothing here restates the contract; it only arranges it.
import { z } from 'zod';
import { API_ERRORS, ApiError, type ErrorCode, type FixedCode } from '../errors';
import type { Route, ResponseSpec } from '../http/route';
import { invalidInput } from '../http/validation';
import {
  batchExceedsRateLimitSchema,
  errorSchema,
  expiredTrialKeySchema,
  insufficientCreditsSchema,
  rateLimitedSchema,
  spendLimitReachedSchema,
  validationErrorSchema,
} from '../schemas/errors';
import { loginRateLimitedSchema } from '../schemas/console';
import { ERROR_EXAMPLE_FIELDS, ERROR_RESPONSE_NOTES } from './error-docs';
import { RESPONSE_HEADERS, type ResponseHeader } from '../schemas/response-headers';
import { RESPONSE_EXAMPLES } from './response-examples';
import { NEWEST_VERSION } from '../versions/registry';

type Json = Record<string, unknown>;

/** Routes below /api answer with `TaskApi-Version` and take it as a request header (docs/api.md, "Versions"). */
const versioned = (route: Route) => route.path.startsWith('/api/');

/** The `TaskApi-Version` request header of every /api operation. */
const VERSION_PARAMETER: Json = {
  name: 'TaskApi-Version',
  in: 'header',
  required: false,
  description:
    'The API version (`YYYY-MM-DD`) to shape this request and its answer by. Without it: the version pinned to the account ' +
    '(`api_version` of `GET /api/auth/session`), or for answers that belong to no account the newest. Malformed or unknown: 400, ' +
    'before authentication.',
  schema: { type: 'string', format: 'date', example: NEWEST_VERSION },
};

const COMPONENT_REF = '#/components/schemas/';

/**
 * What Node's HTTP server answers itself, for any path, before a request reaches the app: no route
 * can change it, so every operation lists it once as a range.
 */
const PROTOCOL_ERROR: Json = {
  description:
    'Refused by the HTTP server before any endpoint sees it, with an empty body and `Connection: close`: `400` for a request ' +
    'that is not valid HTTP/1.1, `431` when the request line and headers exceed 16 KiB.',
};

/** Body schema of each error code that adds fields to `message`. */
const ERROR_BODIES: Partial<Record<ErrorCode, z.ZodType>> = {
  TRIAL_KEY_EXPIRED: expiredTrialKeySchema,
  RATE_LIMITED: rateLimitedSchema,
  INSUFFICIENT_CREDITS: insufficientCreditsSchema,
  SPEND_LIMIT_REACHED: spendLimitReachedSchema,
  BATCH_EXCEEDS_RATE_LIMIT: batchExceedsRateLimitSchema,
  TOO_MANY_LOGIN_ATTEMPTS: loginRateLimitedSchema,
};

/** The body schema of a code: its own, the validation error's for codes about one input, or the plain error's. */
function errorBody(code: ErrorCode): z.ZodType {
  return ERROR_BODIES[code] ?? ('field' in API_ERRORS[code] ? validationErrorSchema : errorSchema);
}

/** Collects JSON Schemas, hoisting every schema with a `meta({ id })` into `components.schemas`. */
class SchemaCollector {
  readonly components: Record<string, Json> = {};

  toJson(schema: z.ZodType, io: 'input' | 'output'): Json {
    const out = z.toJSONSchema(schema, {
      target: 'draft-2020-12',
      io,
      unrepresentable: 'any',
      metadata: z.globalRegistry,
      override: ({ jsonSchema }) => {
        // zod spells date-time out as a long pattern; the format says it.
        if (jsonSchema.format === 'date-time') delete jsonSchema.pattern;
        // Safe-integer bounds are implied by `integer`.
        if (jsonSchema.maximum === Number.MAX_SAFE_INTEGER) delete jsonSchema.maximum;
        if (jsonSchema.minimum === Number.MIN_SAFE_INTEGER) delete jsonSchema.minimum;
        // Responses may gain fields over time; only request bodies are closed.
        if (io === 'output' && jsonSchema.additionalProperties === false) delete jsonSchema.additionalProperties;
      },
    }) as Json;
    const rewritten = JSON.parse(JSON.stringify(out).replaceAll('"#/$defs/', `"${COMPONENT_REF}`)) as Json;
    const { $schema: _schema, $defs, ...root } = rewritten as Json & { $defs?: Record<string, Json> };
    for (const [id, def] of Object.entries($defs ?? {})) this.components[id] ??= def;
    const id = z.globalRegistry.get(schema)?.id;
    if (typeof id === 'string') {
      this.components[id] ??= root;
      return { $ref: `${COMPONENT_REF}${id}` };
    }
    return root;
  }
}

/** Response headers by name, as references to `components.headers` (recorded in `used`). */
function headerObjects(names: readonly ResponseHeader[], used: Set<ResponseHeader>): Json {
  const out: Json = {};
  for (const key of names) {
    const spec: { name?: string; description: string } = RESPONSE_HEADERS[key];
    used.add(key);
    out[spec.name ?? key] = { $ref: `#/components/headers/${key}` };
  }
  return out;
}

function example(code: ErrorCode, invalid?: readonly [string, string, string]): { summary: string; value: Json } {
  if (invalid) {
    const [summary, field, problem] = invalid;
    return { summary, value: invalidInput([{ field, message: problem }], code === 'INVALID_PARAMETER' ? 'query' : 'body').body() as Json };
  }
  const spec = API_ERRORS[code];
  const error =
    typeof spec.message === 'string'
      ? new ApiError(code as FixedCode)
      : new ApiError(code as 'INVALID_FIELD', { params: { name: 'name', problem: 'is invalid' } });
  const sample = ERROR_EXAMPLE_FIELDS[code];
  return { summary: sample?.summary ?? error.message, value: { ...error.body(), ...(sample?.message ? { message: sample.message } : {}), ...sample?.fields } as Json };
}

/** The code of a validation problem with `field`: the body as a whole, a query parameter, or a body field. */
function validationCode(route: Route, field: string): ErrorCode {
  if (field === '(body)') return 'INVALID_REQUEST';
  return route.query ? 'INVALID_PARAMETER' : 'INVALID_FIELD';
}

/** Error codes a route can answer with, besides its own: from its authentication, parameters and body. */
function impliedErrors(route: Route): ErrorCode[] {
  const codes: ErrorCode[] = [];
  if (route.auth === 'apiKey') codes.push('API_KEY_REQUIRED', 'INVALID_API_KEY', 'TRIAL_KEY_EXPIRED', 'RATE_LIMITED');
  if (route.auth === 'readToken') codes.push('READ_TOKEN_REQUIRED', 'INVALID_READ_TOKEN', 'READ_TOKEN_EXPIRED', 'RATE_LIMITED');
  if (route.auth === 'session') codes.push('SESSION_ONLY', 'LOGIN_REQUIRED');
  if (route.auth === 'session' && route.method !== 'get') codes.push('CROSS_SITE_REFUSED');
  if (route.params) codes.push('MALFORMED_REQUEST', route.params.invalid);
  if (route.query) codes.push('INVALID_PARAMETER');
  if (route.headers) codes.push(route.headers.invalid);
  if (route.body) {
    codes.push('INVALID_REQUEST', 'INVALID_FIELD', 'MALFORMED_JSON', 'BODY_TOO_LARGE', 'UNSUPPORTED_ENCODING');
    if (route.body.strict) codes.push('CONTENT_TYPE_NOT_JSON');
  }
  if (route.auth !== 'none') codes.push('INTERNAL', 'SERVICE_UNAVAILABLE');
  if (versioned(route)) codes.push('INVALID_API_VERSION');
  return codes;
}

function errorResponses(route: Route, schemas: SchemaCollector, usedHeaders: Set<ResponseHeader>): Record<string, Json> {
  const codes = [...new Set([...impliedErrors(route), ...(route.errors ?? [])])];
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of codes) {
    const status = API_ERRORS[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const out: Record<string, Json> = {};
  for (const [status, group] of [...byStatus].sort(([a], [b]) => a - b)) {
    const bodies = [...new Set(group.map(errorBody))];
    const examples: Record<string, Json> = {};
    for (const code of group) {
      const samples = (route.invalidExamples ?? []).filter((sample) => validationCode(route, sample[1]) === code);
      samples.forEach((sample, i) => (examples[`${code}_${i + 1}`] = example(code, sample)));
      if (samples.length > 0) continue;
      if (code === 'BODY_TOO_LARGE' && route.body) {
        const limit = route.body.limit;
        examples[code] = { summary: `Over the ${limit}-byte body limit`, value: { message: `Request body too large (limit ${limit} bytes).` } };
      } else {
        examples[code] = example(code);
      }
    }
    const headers: ResponseHeader[] = versioned(route) ? ['X-Request-Id', 'TaskApi-Version'] : ['X-Request-Id'];
    if ((route.auth === 'apiKey' || route.auth === 'readToken') && status !== 401 && status !== 503) headers.push('RateLimit-Policy', 'RateLimit');
    if (group.some((c) => c === 'RATE_LIMITED' || c === 'TOO_MANY_LOGIN_ATTEMPTS' || c === 'SERVICE_UNAVAILABLE')) headers.push('Retry-After');
    const schema = bodies.length === 1 ? schemas.toJson(bodies[0] as z.ZodType, 'output') : { anyOf: bodies.map((b) => schemas.toJson(b, 'output')) };
    out[String(status)] = {
      description: group.map((c) => ERROR_RESPONSE_NOTES[c] ?? `\`${example(c).value.message as string}\``).join(' '),
      headers: headerObjects(headers, usedHeaders),
      content: { 'application/json': { schema, examples } },
    };
  }
  return out;
}

function successResponse(route: Route, status: string, spec: ResponseSpec, schemas: SchemaCollector, usedHeaders: Set<ResponseHeader>): Json {
  const base: ResponseHeader[] = route.auth === 'apiKey' || route.auth === 'readToken' ? ['X-Request-Id', 'RateLimit-Policy', 'RateLimit'] : ['X-Request-Id'];
  if (versioned(route)) base.splice(1, 0, 'TaskApi-Version');
  const out: Json = { description: spec.description, headers: headerObjects([...base, ...(spec.headers ?? [])], usedHeaders) };
  const examples = spec.examples ?? RESPONSE_EXAMPLES[route.operationId]?.[Number(status)];
  if (spec.schema) {
    const media: Json = { schema: schemas.toJson(spec.schema, 'output') };
    if (examples) media.examples = examples;
    // A JSON answer may come in another format too (the usage export's CSV), by `Accept`.
    out.content = { 'application/json': media, ...spec.content };
  } else if (spec.content) {
    // Binary bodies (files) have no example to show; text and JSON ones do.
    out.content = Object.fromEntries(Object.entries(spec.content).map(([type, media]) => [type, examples && type !== '*/*' ? { ...media, examples } : media]));
  }
  return out;
}

function parameters(route: Route, schemas: SchemaCollector): Json[] {
  const out: Json[] = [];
  const fromObject = (schema: z.ZodType | undefined, where: 'path' | 'query' | 'header', describe: Record<string, string> = {}) => {
    if (!schema) return;
    const json = schemas.toJson(schema, 'input') as { properties?: Record<string, Json>; required?: string[] };
    for (const [name, property] of Object.entries(json.properties ?? {})) {
      const { description, ...rest } = property as Json & { description?: string };
      out.push({
        name: where === 'header' ? name.replace(/(^|-)([a-z])/g, (_m, dash: string, c: string) => dash + c.toUpperCase()) : name,
        in: where,
        required: where === 'path' || (json.required ?? []).includes(name),
        description: describe[name] ?? description,
        schema: rest,
      });
    }
  };
  fromObject(route.params?.schema, 'path', route.params?.describe);
  fromObject(route.query, 'query');
  fromObject(route.headers?.schema, 'header', route.headers?.describe);
  if (versioned(route)) out.push(VERSION_PARAMETER);
  return out;
}

const SECURITY: Record<Route['auth'], Json[]> = {
  apiKey: [{ ApiKey: [] }],
  readToken: [{ ReadToken: [] }, { ReadTokenQuery: [] }],
  session: [{ Session: [] }, { SessionCookie: [] }],
  none: [],
};

function operation(route: Route, schemas: SchemaCollector, usedHeaders: Set<ResponseHeader>): Json {
  const responses: Record<string, Json> = {};
  for (const [status, spec] of Object.entries(route.responses)) responses[status] = successResponse(route, status, spec, schemas, usedHeaders);
  for (const [status, response] of Object.entries(errorResponses(route, schemas, usedHeaders))) responses[status] ??= response;
  // Every operation, whatever its own errors: Node's HTTP server answers some requests itself, before
  // any route runs (400 for a malformed request, 431 for headers too large), without our JSON body.
  responses['4XX'] = { $ref: '#/components/responses/ProtocolError' };
  const op: Json = {
    tags: [route.tag],
    operationId: route.operationId,
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    security: SECURITY[route.auth],
  };
  const params = parameters(route, schemas);
  if (params.length > 0) op.parameters = params;
  if (route.body) {
    const media: Json = { schema: schemas.toJson(route.body.schema, 'input') };
    if (route.body.example !== undefined) media.example = route.body.example;
    op.requestBody = { required: true, content: { 'application/json': media } };
  }
  op.responses = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
  return op;
}

export interface DocumentInfo {
  info: Json;
  tags: Json[];
  securitySchemes: Json;
  /** Extra top-level sections (`webhooks`), given the schema collector so they can reference components. */
  extra?: (toJson: (schema: z.ZodType, io: 'input' | 'output') => Json) => Json;
}

/** The OpenAPI 3.1 document of `routes`. */
export function buildDocument(routes: readonly Route[], doc: DocumentInfo): Json {
  const schemas = new SchemaCollector();
  const usedHeaders = new Set<ResponseHeader>();
  const paths: Record<string, Record<string, Json>> = {};
  for (const route of routes) (paths[route.path] ??= {})[route.method] = operation(route, schemas, usedHeaders);
  const extra = doc.extra?.((schema, io) => schemas.toJson(schema, io)) ?? {};
  return {
    openapi: '3.1.0',
    info: doc.info,
    tags: doc.tags,
    paths,
    ...extra,
    components: {
      securitySchemes: doc.securitySchemes,
      responses: { ProtocolError: PROTOCOL_ERROR },
      schemas: Object.fromEntries(Object.entries(schemas.components).sort(([a], [b]) => a.localeCompare(b))),
      headers: Object.fromEntries(
        [...usedHeaders].sort().map((key) => {
          const { name: _name, ...header } = RESPONSE_HEADERS[key] as { name?: string; description: string; schema: Json };
          return [key, header];
        }),
      ),
    },
  };
}
