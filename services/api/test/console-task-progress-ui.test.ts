// The console's task page follows a running task live (its event stream, session cookie): status
// and progress bar move as the worker reports, in a real headless Chromium (playwright-core)
// against a real API on PostgreSQL and Redis.
import { chromium, type Browser, type Page } from 'playwright-core';
import { TaskStatus } from '@taskapi/domain';
import { StatusMarkers } from '@taskapi/task-lifecycle';
import { waitFor } from '@taskapi/testing';
import { createKey, seedAccount, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from './support/harness';
import { waitForText, watchConsolePage } from './support/browser';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

jest.setTimeout(60_000);

describe('console task page: live status and progress', () => {
  let api: TestApi;
  let account: TestAccount;
  let key: CreatedKey;
  let browser: Browser;
  let page: Page;
  const browserProblems: string[] = [];

  beforeAll(async () => {
    api = await startApi();
    account = await seedAccount(api, { credits: 100, label: 'console-progress' });
    key = await createKey(api, account, { type: 'paid' });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    page = await (await browser.newContext({ viewport: { width: 1280, height: 800 } })).newPage();
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

  it('moves from queued to running to 42% to completed without a reload, then stops following', async () => {
    const id = (await api.req('POST', '/api/tasks/face-detection', { headers: withKey(key), body: { image_url: 'https://example.com/a.jpg' } })).body.public_id as string;
    await page.goto(`${api.url}/app/tasks/${id}`);
    const summary = page.locator('#task-summary');
    await waitForText(summary, 'queued');
    await waitForText(page.locator('#task-progress'), 'not started');
    await waitFor(() => api.deps.taskWaiters.size === 1, { what: 'the page to follow the task' });

    await api.deps.db.pool.query('UPDATE tasks SET status = 10, started_at = now() WHERE public_id = $1', [id]);
    await new StatusMarkers(api.deps.redis).status(account.id, id, TaskStatus.processing);
    await waitForText(summary, 'processing');
    await waitForText(page.locator('#task-progress'), 'running');

    await new StatusMarkers(api.deps.redis).progress(account.id, id, 0.42);
    await waitForText(page.locator('#task-progress'), '42%');
    const bar = page.getByRole('progressbar', { name: 'Progress' });
    expect(await bar.evaluate((e: any) => e.value)).toBeCloseTo(0.42);

    await api.deps.taskLifecycle.repair.end(id, { status: TaskStatus.completed, result: { face_coordinates: [] } });
    await waitForText(summary, 'completed');
    await waitForText(page.locator('#task-progress'), '100%');
    await waitForText(page.locator('#task-result'), 'face_coordinates');
    await waitFor(() => api.deps.taskWaiters.size === 0, { what: 'the stream to end' });
    expect(browserProblems).toEqual([]);
  });
});
