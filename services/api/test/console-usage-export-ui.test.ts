// The dashboard's usage export and pinned API version in a real headless Chromium (Debian's
// `chromium` via playwright-core) against a real API on PostgreSQL and Redis: the CSV the page
// downloads is the period on its charts, from the same query as `GET /api/usage`.
import fs from 'node:fs';
import { chromium, type Browser, type Page } from 'playwright-core';
import { NEWEST_VERSION } from '../src/versions/registry';
import { createKey, seedAccount, startApi, withKey, type TestAccount, type TestApi } from './support/harness';
import { waitForText, watchConsolePage } from './support/browser';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

jest.setTimeout(60_000);

const today = () => new Date().toISOString().slice(0, 10);
const daysAgo = (n: number) => new Date(Date.parse(`${today()}T00:00:00Z`) - n * 86_400_000).toISOString().slice(0, 10);

describe('dashboard: usage CSV download and API version, in a real browser', () => {
  let api: TestApi;
  let account: TestAccount;
  let browser: Browser;
  let page: Page;
  const browserProblems: string[] = [];

  beforeAll(async () => {
    api = await startApi();
    account = await seedAccount(api, { credits: 100, label: 'console-usage-export' });
    const key = await createKey(api, account, { type: 'paid' });
    for (const kind of ['image-generation', 'image-generation', 'face-detection']) {
      const body = kind === 'face-detection' ? { image_url: 'https://images.example.test/a.jpg' } : { prompt: 'a lighthouse', width: 64, height: 64 };
      expect((await api.req('POST', `/api/tasks/${kind}`, { headers: withKey(key), body })).status).toBe(201);
    }
    if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: install Debian's chromium package (apt-get install chromium; .ci/run does)`);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, acceptDownloads: true });
    page = await context.newPage();
    page.setDefaultTimeout(15_000);
    watchConsolePage(page, browserProblems);
    await page.goto(`${api.url}/app/login`);
    await page.getByLabel('E-mail', { exact: true }).fill(account.email);
    await page.getByLabel('Password', { exact: true }).fill(account.password);
    await page.keyboard.press('Enter');
    await page.waitForURL(`${api.url}/app`);
  });

  afterAll(async () => {
    await browser?.close();
    await api?.close();
  });

  it("shows the account's pinned API version", async () => {
    await waitForText(page.locator('#api-version'), NEWEST_VERSION);
  });

  it("downloads the charts' period as CSV, grouped as chosen, the same bytes GET /api/usage answers", async () => {
    await waitForText(page.locator('#usage'), /./);
    await page.locator('#usage[aria-busy]').waitFor({ state: 'detached' });
    for (const [days, group] of [['30', 'day'], ['7', 'kind'], ['7', 'key']] as const) {
      const period = page.getByLabel('Period', { exact: true });
      if ((await period.inputValue()) !== days) {
        // The charts (and so the period the download covers) follow once the new report is in.
        await Promise.all([page.waitForResponse((r) => r.url().endsWith(`/api/console/usage?days=${days}`)), period.selectOption(days)]);
        await page.locator('#usage[aria-busy]').waitFor({ state: 'detached' });
      }
      await page.getByLabel('Group the CSV by').selectOption(group);
      const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('button', { name: 'Download CSV' }).click()]);
      const from = daysAgo(Number(days) - 1);
      expect(download.suggestedFilename()).toBe(`usage-${from}-to-${today()}-by-${group}.csv`);
      const saved = fs.readFileSync((await download.path())!, 'utf8');
      const direct = await api.req('GET', `/api/usage?from=${from}&to=${today()}&group_by=${group}`, { headers: { ...account.auth, accept: 'text/csv' } });
      expect(saved).toBe(direct.text);
      const lines = saved.trimEnd().split('\r\n');
      expect(lines[0]).toBe(`${{ day: 'date', kind: 'kind', key: 'key_prefix' }[group]},tasks,completed,failed,cancelled,credits`);
      if (group === 'day') {
        expect(lines).toHaveLength(31);
        // Today's line: the three tasks still queued, charged 2 + 2 + 1.
        expect(lines[30]).toBe(`${today()},3,0,0,0,5`);
      }
      if (group === 'kind') expect(lines.slice(1)).toEqual(['video-generation,0,0,0,0,0', 'image-generation,2,0,0,0,4', 'face-detection,1,0,0,0,1']);
      if (group === 'key') expect(lines).toHaveLength(2);
    }
    expect(browserProblems).toEqual([]);
  });
});
