import { defineRoute, type Route } from '../../http/route';
import { OpenApiDocument } from '../../openapi/document';

/** `GET /api/openapi.json`: the document of `registry` (the registry this route is part of, read on first request). */
export const openApiDocumentRoute = (registry: () => readonly Route[]): Route => {
  let document: OpenApiDocument | undefined;
  return defineRoute({
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
    handler: (_input, { deps }) => {
      document ??= new OpenApiDocument(registry());
      return { status: 200, jsonText: document.json(deps.config.publicBaseUrl), headers: { 'Cache-Control': 'public, max-age=300' } };
    },
  });
};
