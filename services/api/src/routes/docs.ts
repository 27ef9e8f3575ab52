import path from 'node:path';
import express, { Router } from 'express';

const SWAGGER_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));

const DOCS_HTML = `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Task API reference</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="/docs/assets/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>`;

const INIT_JS = `window.ui = SwaggerUIBundle({ url: '/api/openapi.json', dom_id: '#swagger-ui', deepLinking: true });`;

// No inline script: swagger-ui only needs inline styles.
const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'";

/** A Swagger UI page rendering `/api/openapi.json`, served from the npm package. */
export function docsPages(): Router {
  const router = Router();
  router.get('/docs', (_req, res) => {
    res.setHeader('Content-Security-Policy', CSP);
    res.type('html').send(DOCS_HTML);
  });
  router.get('/docs/init.js', (_req, res) => {
    res.type('application/javascript').send(INIT_JS);
  });
  router.use('/docs/assets', express.static(SWAGGER_DIR, { index: false, maxAge: '1d' }));
  return router;
}
