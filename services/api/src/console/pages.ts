// The console's pages under `/app`: static HTML shells plus small vanilla scripts that call the
// documented session JSON API. Nothing to build; the files are read once when the router is made.
import fs from 'node:fs';
import path from 'node:path';
import express, { Router, type ErrorRequestHandler, type RequestHandler, type Response } from 'express';

/** No inline script or style anywhere in the console; media only from us (or blob:/data: previews). */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "media-src 'self' blob:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
  "form-action 'self'",
].join('; ');

// From source, views/ and public/ sit beside this file; the build copies them to dist/console/,
// beside the bundle this code is compiled into.
const CONSOLE_DIR = fs.existsSync(path.join(__dirname, 'views')) ? __dirname : path.join(__dirname, 'console');
const VIEWS_DIR = path.join(CONSOLE_DIR, 'views');
const PUBLIC_DIR = path.join(CONSOLE_DIR, 'public');

interface Page {
  /** Express path under `/app`. */
  route: string;
  /** `views/<view>.html` (the `<main>` content) and `public/<view>.js` (its script). */
  view: string;
  title: string;
  /** Which navigation entry is current; none for the login and error pages, which have no navigation. */
  nav?: NavEntry;
  /** False for a page without a script (`public/<view>.js`). */
  script?: boolean;
}

type NavEntry = 'dashboard' | 'tasks' | 'api-keys' | 'webhook';

const NAV: Array<{ id: NavEntry; href: string; label: string }> = [
  { id: 'dashboard', href: '/app', label: 'Dashboard' },
  { id: 'tasks', href: '/app/tasks', label: 'Tasks' },
  { id: 'api-keys', href: '/app/api-keys', label: 'API keys' },
  { id: 'webhook', href: '/app/webhook', label: 'Webhook' },
];

const PAGES: Page[] = [
  { route: '/login', view: 'login', title: 'Log in' },
  { route: '/', view: 'dashboard', title: 'Dashboard', nav: 'dashboard' },
  { route: '/tasks', view: 'tasks', title: 'Tasks', nav: 'tasks' },
  { route: '/tasks/:publicId', view: 'task', title: 'Task', nav: 'tasks' },
  { route: '/api-keys', view: 'api-keys', title: 'API keys', nav: 'api-keys' },
  { route: '/webhook', view: 'webhook', title: 'Webhook', nav: 'webhook' },
];

function navigation(current: NavEntry): string {
  const links = NAV.map(
    (n) => `<li><a href="${n.href}"${n.id === current ? ' aria-current="page"' : ''}>${n.label}</a></li>`,
  ).join('');
  return `<nav aria-label="Console"><ul class="nav">${links}</ul></nav>
    <div class="account"><span id="account-email" class="account-email"></span>
    <button type="button" id="logout" class="button secondary">Log out</button></div>`;
}

/** Fills `{{name}}` placeholders in one pass (inserted text is never scanned again); a missing value is a bug. */
function fillTemplate(template: string, values: Record<string, string>, what: string): string {
  return template.replace(/\{\{(\w+)\}\}/g, (_m, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`console ${what}: no value for {{${name}}}`);
    return value;
  });
}

function readView(view: string): string {
  return fs.readFileSync(path.join(VIEWS_DIR, `${view}.html`), 'utf8');
}

function renderPage(layout: string, page: Page, main = readView(page.view)): string {
  return fillTemplate(
    layout,
    {
      title: page.title,
      view: page.view,
      script: page.script === false ? '' : `  <script type="module" src="/app/assets/${page.view}.js"></script>\n`,
      header: page.nav ? navigation(page.nav) : '',
      main,
    },
    'layout',
  );
}

/** Text for HTML: whatever the visitor typed into the address bar becomes characters, never markup. */
function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const SHOWN_PATH_MAX = 200;

/** Heading and message (HTML; `path` is already escaped) of the console's error page for a status. */
function errorText(status: number, path: string): [string, string] {
  if (status === 404) return ['Page not found', `There is no console page at <code>${path}</code>. It may have moved, or the address may be mistyped.`];
  if (status === 405) {
    // In practice: the login form, posted by a browser that did not run the console's script.
    return ['Request not accepted', `Console pages can only be opened, not sent to: <code>${path}</code> does not take this request. If you were logging in, reload the page and try again.`];
  }
  return ['Bad address', `The address <code>${path}</code> is not valid, so no console page can be shown for it.`];
}

/**
 * The console's own error page (no script: it holds no data, and a visitor without a session sees
 * it too): 404 for a path under `/app` that is no page, 405 for a request other than GET or HEAD,
 * or another 4xx for an address Express could not read (a broken %-escape). Styled like the
 * console, with a way back to its home.
 */
function sendErrorPage(res: Response, layout: string, template: string, status: number, originalUrl: string): void {
  const requested = requestPath(originalUrl);
  const shown = requested.length > SHOWN_PATH_MAX ? `${requested.slice(0, SHOWN_PATH_MAX)}…` : requested;
  const [heading, message] = errorText(status, escapeHtml(shown));
  const main = fillTemplate(template, { heading, message }, 'error page');
  const html = renderPage(layout, { route: '', view: 'error', title: heading, script: false }, main);
  if (status === 405) res.setHeader('Allow', 'GET, HEAD');
  res.status(status).setHeader('Cache-Control', 'no-store');
  res.type('html').send(html);
}

/** The path as requested (still %-encoded), without the query: a query is not shown back. */
function requestPath(originalUrl: string): string {
  const end = originalUrl.search(/[?#]/);
  return end === -1 ? originalUrl : originalUrl.slice(0, end);
}

const withCsp: RequestHandler = (_req, res, next) => {
  res.setHeader('Content-Security-Policy', CONSOLE_CSP);
  next();
};

/**
 * The `/app` router: the console pages and their assets. Pages hold no data, only markup, so they are
 * served without a session (their scripts send a visitor without one to the login page). Anything
 * else under `/app` is an HTML error page, never the API's JSON.
 */
export function consolePages(): Router {
  const layout = fs.readFileSync(path.join(VIEWS_DIR, 'layout.html'), 'utf8');
  const errorTemplate = readView('error');
  const router = Router();
  router.use(withCsp);
  // Unversioned file names: browsers revalidate (ETag) on every load, so a deploy shows at once.
  router.use('/assets', express.static(PUBLIC_DIR, { index: false, maxAge: 0 }));
  for (const page of PAGES) {
    const html = renderPage(layout, page);
    router.get(page.route, (_req, res) => {
      res.setHeader('Cache-Control', 'no-cache');
      res.type('html').send(html);
    });
  }
  router.use((req, res) => sendErrorPage(res, layout, errorTemplate, req.method === 'GET' || req.method === 'HEAD' ? 404 : 405, req.originalUrl));
  const clientError: ErrorRequestHandler = (err: { status?: unknown }, req, res, next) => {
    const status = typeof err?.status === 'number' ? err.status : 500;
    // Bugs and outages go on to the app's error handler, which logs them.
    if (status < 400 || status > 499 || res.headersSent) {
      next(err);
      return;
    }
    sendErrorPage(res, layout, errorTemplate, status, req.originalUrl);
  };
  router.use(clientError);
  return router;
}
