import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { TASK_QUEUES, WEBHOOK_QUEUE } from '@taskapi/queue';
import { API_ERRORS } from '../src/errors';
import { BULL_BOARD_CSP, withoutForeignAssets } from '../src/routes/self-contained-board-adapter';
import { createKey, seedAccount, startApi, withKey, type TestApi } from './support/harness';

const basic = (user: string, password: string) => ({ authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}` });

describe('Bull Board at /admin/queues', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startApi({ ADMIN_USER: 'ops', ADMIN_PASSWORD: 'correct horse battery' });
  });
  afterAll(() => api.close());

  it('asks for operator credentials and refuses wrong ones', async () => {
    const none = await api.req('GET', '/admin/queues');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
    expect((await api.req('GET', '/admin/queues', { headers: basic('ops', 'wrong') })).status).toBe(401);
    expect((await api.req('GET', '/admin/queues/api/queues', { headers: basic('someone', 'correct horse battery') })).status).toBe(401);
  });

  it('shows every task queue and the webhook queue', async () => {
    const page = await api.req('GET', '/admin/queues', { headers: basic('ops', 'correct horse battery') });
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toMatch(/text\/html/);
    const queues = await api.req('GET', '/admin/queues/api/queues', { headers: basic('ops', 'correct horse battery') });
    expect(queues.status).toBe(200);
    const names = (queues.body.queues as Array<{ name: string }>).map((q) => q.name).sort();
    // Each kind's queue (released and running jobs) and, beside it, its accounts' lines.
    const lines = Object.keys(TASK_QUEUES).map((kind) => `{lines-${kind}}`);
    expect(names).toEqual([...Object.values(TASK_QUEUES).map((q) => q.name), ...lines, WEBHOOK_QUEUE.name].sort());
  });

  it("shows the tasks waiting in the accounts' lines, read-only, with account, fairness key, priority, age and expiry", async () => {
    const auth = basic('ops', 'correct horse battery');
    const account = await seedAccount(api, { credits: 100 });
    const key = await createKey(api, account, { type: 'paid' });
    // No worker runs here: nothing is released, both tasks wait in the account's line.
    const urgent = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'x', priority: 60, ttl_seconds: 600, fairness_key: 'user-9' } });
    const plain = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'y' } });
    const name = '{lines-image-generation}';
    // The Redis database is shared with other test files' APIs: their tasks wait in the lines too.
    const res = await api.req('GET', `/admin/queues/api/queues?activeQueue=${encodeURIComponent(name)}&status=waiting&page=1&jobsPerPage=1000`, { headers: auth });
    expect(res.status).toBe(200);
    const board = (res.body.queues as any[]).find((q) => q.name === name);
    expect(board.readOnlyMode).toBe(true);
    expect(board.counts.waiting).toBeGreaterThanOrEqual(2);
    const mine = (board.jobs as any[]).filter((j) => j.data.account_id === account.id);
    // The account's tasks in the order they will start: the one with a priority first.
    expect(mine.map((j) => j.id)).toEqual([urgent.body.public_id, plain.body.public_id]);
    expect(mine[0].data).toEqual({
      account_id: account.id,
      fairness_key: 'user-9',
      priority: 60,
      age_seconds: expect.any(Number),
      expires_at: new Date(new Date(urgent.body.created_at).getTime() + 600_000).toISOString(),
      held_by_account_cap: false,
    });
    expect(mine[1].data).toMatchObject({ fairness_key: null, priority: 0, expires_at: null });
    // One task's page, and no action on the lines.
    const job = await api.req('GET', `/admin/queues/api/queues/${encodeURIComponent(name)}/${plain.body.public_id}`, { headers: auth });
    expect(job.status).toBe(200);
    expect(job.body.job.id).toBe(plain.body.public_id);
    const retry = await api.req('PUT', `/admin/queues/api/queues/${encodeURIComponent(name)}/${plain.body.public_id}/retry`, { headers: auth });
    expect(retry.status).toBe(405);
    expect((await api.req('PUT', `/admin/queues/api/queues/${encodeURIComponent(name)}/clean/waiting`, { headers: auth })).status).toBe(405);
  });
});

/** Every absolute or protocol-relative URL in src/href attributes and CSS url()s of a page. */
function externalUrls(html: string): string[] {
  const attrs = [...html.matchAll(/\b(?:src|href)\s*=\s*["']?((?:https?:)?\/\/[^"'\s>]+)/gi)].map((m) => m[1]!);
  const css = [...html.matchAll(/url\(\s*["']?((?:https?:)?\/\/[^"')]+)/gi)].map((m) => m[1]!);
  const imports = [...html.matchAll(/@import\s+["']((?:https?:)?\/\/[^"']+)/gi)].map((m) => m[1]!);
  return [...attrs, ...css, ...imports];
}

describe('Bull Board page', () => {
  it('loads nothing from another origin and carries a strict CSP', async () => {
    const api = await startApi({ ADMIN_USER: 'ops', ADMIN_PASSWORD: 'pw' });
    try {
      const page = await api.req('GET', '/admin/queues', { headers: basic('ops', 'pw') });
      expect(page.status).toBe(200);
      expect(page.text).toContain('static/js/');
      expect(externalUrls(page.text)).toEqual([]);
      expect(page.headers.get('content-security-policy')).toBe(BULL_BOARD_CSP);
      expect(BULL_BOARD_CSP).toContain("script-src 'self';");
      expect(BULL_BOARD_CSP).not.toMatch(/unsafe-eval|https?:/);
      // Deep links render the same page.
      const deep = await api.req('GET', `/admin/queues/queue/${encodeURIComponent(WEBHOOK_QUEUE.name)}`, { headers: basic('ops', 'pw') });
      expect(deep.status).toBe(200);
      expect(externalUrls(deep.text)).toEqual([]);
      // Its stylesheet imports no web font either.
      const css = page.text.match(/href="(static\/css\/[^"]+)"/)![1]!;
      const sheet = await api.req('GET', `/admin/queues/${css}`, { headers: basic('ops', 'pw') });
      expect(sheet.status).toBe(200);
      expect(externalUrls(sheet.text)).toEqual([]);
    } finally {
      await api.close();
    }
  });

  it('strips stylesheets and scripts of other origins from the upstream template', () => {
    const upstream = fs.readFileSync(path.join(path.dirname(require.resolve('@bull-board/ui/package.json')), 'dist/index.ejs'), 'utf8');
    expect(externalUrls(withoutForeignAssets(upstream))).toEqual([]);
    const html = [
      '<link rel="preconnect" href="https://fonts.gstatic.com" crossorigin>',
      "<link href='//cdn.example/x.css' rel=stylesheet>",
      '<script defer src="https://cdn.example/x.js"></script>',
      '<link href="static/css/main.css" rel="stylesheet">',
      '<script defer src="static/js/main.js"></script>',
    ].join('\n');
    expect(withoutForeignAssets(html)).toBe('<link href="static/css/main.css" rel="stylesheet">\n<script defer src="static/js/main.js"></script>');
  });
});

describe('Bull Board in development without ADMIN_USER/ADMIN_PASSWORD', () => {
  it('uses a generated login kept in the development secrets file, named in the log but never the password', async () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bull-board-')), 'dev-secrets.json');
    const stream = new PassThrough();
    let log = '';
    stream.on('data', (c: Buffer) => (log += c.toString()));
    const api = await startApi({ NODE_ENV: 'development', DEV_SECRETS_FILE: file, LOG_LEVEL: 'debug' }, { logStream: stream });
    try {
      const none = await api.req('GET', '/admin/queues');
      expect(none.status).toBe(401);
      expect(none.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
      expect((await api.req('GET', '/admin/queues/api/queues')).status).toBe(401);
      expect((await api.req('GET', '/admin/queues/static/images/logo.svg')).status).toBe(401);

      const stored = JSON.parse(fs.readFileSync(file, 'utf8')) as { ADMIN_USER: string; ADMIN_PASSWORD: string };
      expect(stored.ADMIN_USER).toBe('admin');
      expect(stored.ADMIN_PASSWORD.length).toBeGreaterThanOrEqual(20);
      expect((await api.req('GET', '/admin/queues', { headers: basic('admin', 'wrong') })).status).toBe(401);
      const page = await api.req('GET', '/admin/queues', { headers: basic(stored.ADMIN_USER, stored.ADMIN_PASSWORD) });
      expect(page.status).toBe(200);
      expect(page.headers.get('content-type')).toMatch(/text\/html/);
      expect(externalUrls(page.text)).toEqual([]);

      await new Promise((r) => setImmediate(r));
      const lines = log.trim().split('\n').map((l) => JSON.parse(l) as { level: string; message: string });
      expect(lines).toContainEqual(expect.objectContaining({ level: 'warn', message: expect.stringContaining(file) }));
      expect(log).not.toContain(stored.ADMIN_PASSWORD);
    } finally {
      await api.close();
    }
  });
});

describe('Bull Board without operator credentials', () => {
  it('is refused in tests (NODE_ENV=test generates no login)', async () => {
    const api = await startApi();
    try {
      expect(api.config.admin).toBeUndefined();
      expect((await api.req('GET', '/admin/queues')).status).toBe(403);
    } finally {
      await api.close();
    }
  });

  it('is refused in production', async () => {
    const api = await startApi({ NODE_ENV: 'production', PUBLIC_BASE_URL: 'https://tasks.example.com' });
    try {
      const res = await api.req('GET', '/admin/queues');
      expect(res.status).toBe(403);
      expect(res.body.message).toBe(API_ERRORS.OPERATOR_LOGIN_DISABLED.message);
      expect((await api.req('GET', '/admin/queues/api/queues')).status).toBe(403);
    } finally {
      await api.close();
    }
  });
});
