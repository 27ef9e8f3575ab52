// Operational endpoints: health, readiness, metrics, and this document. No authentication.
import { BASE_HEADERS, NO_SECURITY, headers, json, response, schema, type OpenApiObject } from './refs';

const TAGS = ['Operations'];

export const opsPaths: Record<string, OpenApiObject> = {
  '/healthz': {
    get: {
      tags: TAGS,
      operationId: 'health',
      summary: 'Liveness',
      description: 'The process is up. Checks nothing else.',
      security: NO_SECURITY,
      responses: { '200': { description: 'Alive.', headers: headers(...BASE_HEADERS), content: json(schema('Health')) } },
    },
  },
  '/readyz': {
    get: {
      tags: TAGS,
      operationId: 'readiness',
      summary: 'Readiness',
      description:
        'Whether PostgreSQL and Redis answer (each within 2 seconds). After SIGTERM the API answers 503 `draining` at once, while it still serves requests for `SHUTDOWN_DRAIN_MS`.',
      security: NO_SECURITY,
      responses: {
        '200': {
          description: 'Ready: both dependencies answered.',
          headers: headers(...BASE_HEADERS),
          content: { 'application/json': { schema: schema('Readiness'), example: { status: 'ready', checks: { database: 'ok', redis: 'ok' } } } },
        },
        '503': {
          description: 'Not ready: a dependency did not answer, or the process is shutting down.',
          headers: headers(...BASE_HEADERS),
          content: {
            'application/json': {
              schema: { oneOf: [schema('Readiness'), schema('Draining')] },
              examples: {
                not_ready: { value: { status: 'not_ready', checks: { database: 'ok', redis: 'unavailable' } } },
                draining: { value: { status: 'draining' } },
              },
            },
          },
        },
      },
    },
  },
  '/metrics': {
    get: {
      tags: TAGS,
      operationId: 'metrics',
      summary: 'Prometheus metrics',
      description: 'HTTP request counts and durations by route, tasks created, rate-limit rejections, and process metrics.',
      security: NO_SECURITY,
      responses: {
        '200': {
          description: 'Prometheus text exposition format.',
          headers: headers(...BASE_HEADERS),
          content: { 'text/plain': { schema: { type: 'string' } } },
        },
        '500': response('InternalError'),
      },
    },
  },
  '/api/openapi.json': {
    get: {
      tags: TAGS,
      operationId: 'openApiDocument',
      summary: 'This OpenAPI document',
      description: 'Rendered by Swagger UI at `/docs`.',
      security: NO_SECURITY,
      responses: {
        '200': {
          description: 'The OpenAPI 3.1 document.',
          headers: { ...headers(...BASE_HEADERS), 'Cache-Control': { schema: { type: 'string', example: 'public, max-age=300' } } },
          content: { 'application/json': { schema: { type: 'object' } } },
        },
      },
    },
  },
};
