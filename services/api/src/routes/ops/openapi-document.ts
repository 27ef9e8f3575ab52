import { defineRoute } from '../../http/route';
import { openApiJson } from '../../openapi/document';

export const openApiDocumentRoute = defineRoute({
  operationId: 'openApiDocument',
  method: 'get',
  path: '/api/openapi.json',
  tag: 'Operations',
  summary: 'This OpenAPI document',
  description: 'Rendered by Swagger UI at `/docs`.',
  auth: 'none',
  responses: {
    200: { description: 'The OpenAPI 3.1 document.', headers: ['Cache-Control-OpenApi'], content: { 'application/json': { schema: { type: 'object' } } } },
  },
  handler: () => ({ status: 200, jsonText: openApiJson(), headers: { 'Cache-Control': 'public, max-age=300' } }),
});
