/** OpenAPI 3.1 description of the public HTTP API (kept in step with DESIGN.md and the routes). */
export const openApiDocument = {
  openapi: '3.1.0',
  info: { title: 'Task API', version: '1.0.0' },
  paths: {},
} as const;
