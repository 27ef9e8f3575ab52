// The integrator's server for the example page (README.md beside it): serves the page and the SDK's
// browser module, and on POST /generate creates an image task with its own API key and mints a read
// token for it. The key stays here; the page gets only the task id, the token and the API's URL.
//
//   TASKAPI_API_KEY=sk-live-… TASKAPI_BASE_URL=http://127.0.0.1:3000 PORT=8080 node server.mjs
//
// and, on the API, CORS_ALLOWED_ORIGINS=http://127.0.0.1:8080.
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { TaskApi } from '@taskapi/client';

const here = path.dirname(fileURLToPath(import.meta.url));
const browserModule = fileURLToPath(import.meta.resolve('@taskapi/client/browser'));
const api = new TaskApi({ apiKey: process.env.TASKAPI_API_KEY, baseUrl: process.env.TASKAPI_BASE_URL });
const apiBase = process.env.TASKAPI_PUBLIC_URL ?? process.env.TASKAPI_BASE_URL;

const FILES = {
  '/': ['index.html', 'text/html; charset=utf-8'],
  '/page.js': ['page.js', 'text/javascript; charset=utf-8'],
  '/style.css': ['style.css', 'text/css; charset=utf-8'],
};
// The page may talk to its own server and read from the Task API; nothing else.
const csp = `default-src 'self'; connect-src 'self' ${new URL(apiBase).origin}; img-src 'self' ${new URL(apiBase).origin} data:; script-src 'self'; style-src 'self'`;

async function body(req) {
  let text = '';
  for await (const chunk of req) {
    text += chunk;
    if (text.length > 4096) throw new Error('too large');
  }
  return JSON.parse(text || '{}');
}

const server = http.createServer(async (req, res) => {
  const send = (status, type, data) => {
    res.writeHead(status, { 'content-type': type, 'content-security-policy': csp, 'cache-control': 'no-store' });
    res.end(data);
  };
  try {
    if (req.method === 'POST' && req.url === '/generate') {
      const { prompt } = await body(req);
      const task = await api.tasks.create('image-generation', { prompt: String(prompt ?? '').slice(0, 200) || 'an image', width: 256, height: 256 });
      const { token } = await api.tasks.createReadToken(task.public_id, { ttlSeconds: 600 });
      return send(200, 'application/json', JSON.stringify({ task_id: task.public_id, token, api_base: apiBase }));
    }
    if (req.method === 'GET' && req.url === '/taskapi-browser.mjs') return send(200, 'text/javascript; charset=utf-8', fs.readFileSync(browserModule));
    const file = req.method === 'GET' ? FILES[req.url] : undefined;
    if (file) return send(200, file[1], fs.readFileSync(path.join(here, file[0])));
    send(404, 'application/json', JSON.stringify({ message: 'Not found.' }));
  } catch (err) {
    send(502, 'application/json', JSON.stringify({ message: err.message }));
  }
});
server.listen(Number(process.env.PORT ?? 8080), process.env.HOST ?? '127.0.0.1', () => {
  const { port } = server.address();
  console.log(`example page on http://${process.env.HOST ?? '127.0.0.1'}:${port}`);
});
