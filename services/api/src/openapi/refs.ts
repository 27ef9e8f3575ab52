// Small helpers for writing the OpenAPI document: `$ref`s to components and JSON content blocks.
// The document itself stays plain data (it is served with JSON.stringify).

/** A loosely typed OpenAPI object (schema, response, operation, ...). */
export type OpenApiObject = Record<string, unknown>;

type ComponentKind = 'schemas' | 'responses' | 'parameters' | 'headers' | 'examples' | 'securitySchemes' | 'requestBodies';

function ref(kind: ComponentKind, name: string): { $ref: string } {
  return { $ref: `#/components/${kind}/${name}` };
}

export const schema = (name: string) => ref('schemas', name);
export const response = (name: string) => ref('responses', name);
export const parameter = (name: string) => ref('parameters', name);
export const header = (name: string) => ref('headers', name);
export const example = (name: string) => ref('examples', name);

/** `content` for an `application/json` body with the given schema and named example components. */
export function json(bodySchema: OpenApiObject, exampleNames: readonly string[] = []): OpenApiObject {
  const media: OpenApiObject = { schema: bodySchema };
  if (exampleNames.length > 0) media.examples = Object.fromEntries(exampleNames.map((n) => [n, example(n)]));
  return { 'application/json': media };
}

/** Response headers by component name: `{ 'X-Request-Id': {$ref: ...}, ... }`. */
export function headers(...names: readonly string[]): OpenApiObject {
  return Object.fromEntries(names.map((n) => [n, header(n)]));
}

/** Headers on every response. */
export const BASE_HEADERS = ['X-Request-Id'] as const;
/** Headers on every response to a key-authenticated request that passed authentication. */
export const RATE_HEADERS = ['X-Request-Id', 'RateLimit-Policy', 'RateLimit'] as const;

/**
 * A response with a JSON error body: `schemaName` for the body, the listed examples (component
 * names, each an exact message), and the given header components.
 */
export function errorResponse(
  description: string,
  schemaName: string,
  exampleNames: readonly string[],
  headerNames: readonly string[] = BASE_HEADERS,
): OpenApiObject {
  return { description, headers: headers(...headerNames), content: json(schema(schemaName), exampleNames) };
}

/** Security requirement lists. */
export const API_KEY_SECURITY = [{ ApiKey: [] }];
export const SESSION_SECURITY = [{ Session: [] }, { SessionCookie: [] }];
export const NO_SECURITY: never[] = [];
