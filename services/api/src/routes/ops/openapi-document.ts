import { defineRoute } from '../../http/route';
import { openApiJson } from '../../openapi/document';

export const openApiDocumentRoute = defineRoute({
  operationId: 'openApiDocument',
  method: 'get',
  path: '/api/openapi.json',
  tag: 'Operations',
  summary: 'This OpenAPI document',
  description: 'Rendered by Swagger UI at `/docs`. `servers` names this deployment (`PUBLIC_BASE_URL`).',
  auth: 'none',
  responses: {
    200: { description: 'The OpenAPI 3.1 document.', headers: ['Cache-Control-OpenApi'], content: { 'application/json': { schema: { type: 'object' } } } },
  },
  handler: (_input, { deps }) => ({ status: 200, jsonText: openApiJson(deps.config.publicBaseUrl), headers: { 'Cache-Control': 'public, max-age=300' } }),
});
