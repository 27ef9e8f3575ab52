// The console's pages under `/app`: static HTML shells plus small vanilla scripts that call the
// documented session JSON API. Nothing to build; the files are read once when the router is made.
import fs from 'node:fs';
import path from 'node:path';
import express, { Router, type RequestHandler } from 'express';

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
  /** Which navigation entry is current; none for the login page, which has no navigation. */
  nav?: NavEntry;
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

function renderPage(layout: string, page: Page): string {
  const fill: Record<string, string> = {
    title: page.title,
    view: page.view,
    header: page.nav ? navigation(page.nav) : '',
    main: fs.readFileSync(path.join(VIEWS_DIR, `${page.view}.html`), 'utf8'),
  };
  return layout.replace(/\{\{(\w+)\}\}/g, (_m, name: string) => {
    const value = fill[name];
    if (value === undefined) throw new Error(`console layout: no value for {{${name}}}`);
    return value;
  });
}

const withCsp: RequestHandler = (_req, res, next) => {
  res.setHeader('Content-Security-Policy', CONSOLE_CSP);
  next();
};

/** The `/app` router: the console pages and their assets. Pages hold no data, only markup. */
export function consolePages(): Router {
  const layout = fs.readFileSync(path.join(VIEWS_DIR, 'layout.html'), 'utf8');
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
  return router;
}
