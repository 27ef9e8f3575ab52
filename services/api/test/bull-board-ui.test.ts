// Bull Board in a real headless Chromium (as console-ui.test.ts drives the console): the board
// renders under its CSP without a single violation, and every request the page makes, including
// the scripts, styles and locale files it loads on its own, goes to this server.
import { chromium, type Browser } from 'playwright-core';
import { WEBHOOK_QUEUE } from '@taskapi/queue';
import { startApi, type TestApi } from './support/harness';

const CHROMIUM = '/usr/bin/chromium';
// Closed network, running as root: no sandbox, no GPU, nothing that phones home.
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

jest.setTimeout(60_000);

describe('Bull Board in a browser', () => {
  let api: TestApi;
  let browser: Browser;
  beforeAll(async () => {
    api = await startApi({ ADMIN_USER: 'ops', ADMIN_PASSWORD: 'correct horse battery' });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });
  afterAll(async () => {
    await browser?.close();
    await api?.close();
  });

  it('renders every queue with no third-party request and no CSP violation', async () => {
    const context = await browser.newContext({ httpCredentials: { username: 'ops', password: 'correct horse battery' } });
    try {
      const page = await context.newPage();
      const requested: string[] = [];
      const problems: string[] = [];
      page.on('request', (r) => requested.push(r.url()));
      page.on('console', (m) => {
        // Chromium's hint about Bull Board's own preloaded chunks (it appears when a busy machine
        // loads the page slowly) is about timing, not a failed request or a CSP violation.
        if (/was preloaded using link preload but not used/.test(m.text())) return;
        if (m.type() === 'error' || m.type() === 'warning') problems.push(m.text());
      });
      page.on('pageerror', (e) => problems.push(e.message));

      await page.goto(`${api.url}/admin/queues`);
      await page.getByText(WEBHOOK_QUEUE.name).first().waitFor({ timeout: 15_000 });
      await page.getByText(WEBHOOK_QUEUE.name).first().click();
      await page.getByText(/no workers|jobs/i).first().waitFor({ timeout: 15_000 });

      expect(requested.length).toBeGreaterThan(3);
      expect(requested.filter((u) => !u.startsWith(`${api.url}/`))).toEqual([]);
      expect(problems).toEqual([]);
    } finally {
      await context.close();
    }
  });
});
