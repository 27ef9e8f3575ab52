import fs from 'node:fs';
import path from 'node:path';
import express, { Router } from 'express';

const SWAGGER_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));

// The quickstart's scripts, shown on /docs exactly as the tests run them: docs/quickstart/ in the
// repository, copied to dist/docs/quickstart/ by the build.
const QUICKSTART_DIR = [path.join(__dirname, 'docs', 'quickstart'), path.resolve(__dirname, '../../../../docs/quickstart')].find((dir) => fs.existsSync(dir));

/** The quickstart's tabs: file, label, and what to install. */
export const QUICKSTART_SNIPPETS = [
  { file: 'quickstart.sh', id: 'curl', label: 'curl', needs: 'bash, curl, jq and openssl.' },
  { file: 'quickstart.mjs', id: 'node', label: 'Node.js (SDK)', needs: 'Node.js 20 or later and <code>npm install @taskapi/client</code>.' },
  { file: 'quickstart.py', id: 'python', label: 'Python', needs: 'Python 3.10 or later; standard library only.' },
] as const;

const escapeHtml = (text: string) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;').replaceAll('"', '&quot;');

function quickstartHtml(publicBaseUrl: string, snippets: ReadonlyMap<string, string>): string {
  const radios = QUICKSTART_SNIPPETS.map(
    (s, i) => `<input type="radio" name="lang" id="tab-${s.id}"${i === 0 ? ' checked' : ''}><label for="tab-${s.id}">${s.label}</label>`,
  ).join('\n    ');
  const panels = QUICKSTART_SNIPPETS.map(
    (s) => `<section class="panel" id="panel-${s.id}">
      <p>Needs ${s.needs} <a href="/docs/quickstart/${s.file}" download>Download ${s.file}</a></p>
      <pre><code data-file="${s.file}">${escapeHtml(snippets.get(s.file) ?? '')}</code></pre>
    </section>`,
  ).join('\n    ');
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Task API: quickstart and reference</title>
  <link rel="stylesheet" href="/docs/assets/swagger-ui.css">
  <link rel="stylesheet" href="/docs/docs.css">
</head>
<body>
<main class="quickstart">
  <h1>Task API quickstart</h1>
  <p>From an API key to a downloaded result in five steps. The scripts below are complete and tested: the test suite runs
  each of them, byte for byte as shown here, against a running service.</p>
  <ol>
    <li><strong>Get an API key</strong> in the console under <a href="/app/api-keys">API keys</a> (<code>sk-live-…</code> draws on
      your credits, <code>sk-test-…</code> on a trial grant). Your webhook secret is under <a href="/app/webhook">Webhook</a>.</li>
    <li><strong>Create a task</strong>: <code>POST /api/tasks/image-generation</code> with an <code>Idempotency-Key</code>, so a retried
      request never creates or charges twice.</li>
    <li><strong>Wait</strong> with <code>Prefer: wait=50</code> (the answer comes as soon as the task finishes; 50 s stays under
      the 60 s idle timeout of common proxies), or give a <code>callback_url</code> and receive a webhook. To show its progress
      while it runs, follow <code>GET /api/tasks/{id}/events</code> (server-sent events; the SDK's <code>tasks.events(id)</code>).</li>
    <li><strong>Verify the webhook</strong>: <code>X-Signature</code> is the HMAC-SHA256 (lowercase hex) of the exact raw body bytes,
      keyed with your whole <code>whsec_…</code> secret. It does not sign a time: to refuse replays, check the Standard Webhooks
      headers too (<code>webhook-signature</code> signs <code>webhook-timestamp</code>), as the SDK does with
      <code>requireStandardWebhooks: true</code>.</li>
    <li><strong>Download the result</strong> from <code>files[].url</code>, a signed link that needs no API key.</li>
  </ol>
  <p><strong>Showing a task in your users' browser?</strong> Never send the API key there. Your server mints a read token
  for the one task (<code>POST /api/tasks/{id}/read-token</code>, 15 minutes by default; the SDK's
  <code>tasks.createReadToken(id)</code>) and hands it to the page, which follows <code>GET /api/public/tasks/{id}/events</code>
  with it (<code>watchTask</code> from <code>@taskapi/client/browser</code>). List the page's origin in the service's
  <code>CORS_ALLOWED_ORIGINS</code>.</p>
  <p>Set these, then run a script:</p>
  <pre><code>export TASKAPI_BASE_URL=${escapeHtml(publicBaseUrl)}
export TASKAPI_API_KEY=sk-test-...            # step 1
export TASKAPI_CALLBACK_URL=https://...       # optional: where the webhook goes
export TASKAPI_WEBHOOK_SECRET=whsec_...       # for "verify" only</code></pre>
  <div class="tabs">
    ${radios}
    ${panels}
  </div>
  <p>Each script, run with <code>verify</code> and a received body on standard input, checks a notification the way your
  receiver should: the curl and Python scripts take <code>"$X_SIGNATURE" "$X_TIMESTAMP"</code>, the Node.js one
  <code>"$X_SIGNATURE" "$WEBHOOK_ID" "$WEBHOOK_TIMESTAMP" "$WEBHOOK_SIGNATURE"</code>. To receive webhooks on your own
  machine, expose a local receiver through a tunnel (any HTTPS tunnelling tool) and use its URL as
  <code>callback_url</code>. The SDK's documentation is its README on npm
  (<a href="https://www.npmjs.com/package/@taskapi/client">@taskapi/client</a>); every endpoint is in the
  <a href="#reference">API reference</a> below.</p>
  <h2 id="license">License</h2>
  <p>The Task API and this documentation are proprietary. The quickstart scripts on this page are sample code under the
  MIT License: copy, change and use them freely. The SDK, <code>@taskapi/client</code>, is MIT-licensed too.</p>
  <h2 id="reference">API reference</h2>
  <p>Every endpoint, with examples of every answer and error. The same document as JSON: <a href="/api/openapi.json">/api/openapi.json</a> (OpenAPI 3.1).</p>
</main>
<div id="swagger-ui"></div>
<script src="/docs/assets/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body>
</html>`;
}

const DOCS_CSS = `.quickstart { max-width: 1460px; margin: 0 auto; padding: 0 20px; font: 15px/1.5 system-ui, sans-serif; color: #3b4151; }
.quickstart h1 { font-size: 28px; margin: 24px 0 8px; }
.quickstart h2 { font-size: 22px; margin: 32px 0 0; }
.quickstart code { font: 13px ui-monospace, monospace; }
.quickstart pre { background: #263238; color: #eceff1; padding: 12px 16px; border-radius: 4px; overflow-x: auto; }
.tabs > input { position: absolute; opacity: 0; }
.tabs > label { display: inline-block; padding: 6px 14px; border: 1px solid #d0d7de; border-bottom: none; border-radius: 4px 4px 0 0; cursor: pointer; }
.tabs > input:checked + label { background: #263238; color: #fff; }
.tabs > input:focus-visible + label { outline: 2px solid #4990e2; }
.tabs .panel { display: none; }
${QUICKSTART_SNIPPETS.map((s) => `#tab-${s.id}:checked ~ #panel-${s.id}`).join(',\n')} { display: block; }
`;

// validatorUrl null: the default sends the document to validator.swagger.io as an <img>, which the
// CSP's img-src blocks (an error in the console on every load).
const INIT_JS = `window.ui = SwaggerUIBundle({ url: '/api/openapi.json', dom_id: '#swagger-ui', deepLinking: true, validatorUrl: null });`;

// No inline script: swagger-ui only needs inline styles.
const CSP = "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'; object-src 'none'; frame-ancestors 'none'; base-uri 'none'";

/** The quickstart's scripts as files hold them (read once, at start-up). */
export function quickstartSnippets(): Map<string, string> {
  if (!QUICKSTART_DIR) throw new Error('docs/quickstart/ is missing: run `npm run build`');
  return new Map(QUICKSTART_SNIPPETS.map((s) => [s.file, fs.readFileSync(path.join(QUICKSTART_DIR, s.file), 'utf8')]));
}

/** `/docs`: the quickstart, then Swagger UI rendering `/api/openapi.json` (served from the npm package). */
export function docsPages(publicBaseUrl: string): Router {
  const snippets = quickstartSnippets();
  const html = quickstartHtml(publicBaseUrl, snippets);
  const router = Router();
  router.get('/docs', (_req, res) => {
    res.setHeader('Content-Security-Policy', CSP);
    res.type('html').send(html);
  });
  router.get('/docs/init.js', (_req, res) => {
    res.type('application/javascript').send(INIT_JS);
  });
  router.get('/docs/docs.css', (_req, res) => {
    res.type('text/css').send(DOCS_CSS);
  });
  router.get('/docs/quickstart/:file', (req, res, next) => {
    const text = snippets.get(req.params.file);
    if (text === undefined) {
      next();
      return;
    }
    res.type('text/plain; charset=utf-8').setHeader('Content-Disposition', `attachment; filename="${req.params.file}"`);
    res.send(text);
  });
  router.use('/docs/assets', express.static(SWAGGER_DIR, { index: false, maxAge: '1d' }));
  return router;
}
