// The console at /app in a real headless Chromium (Debian's `chromium`, driven by playwright-core)
// against a real API on PostgreSQL and Redis. Every step uses real clicks, typing and keys, and
// waits for conditions. Screenshots of each page go to a temp folder, or with UPDATE_SCREENSHOTS=1
// to docs/screenshots/ for docs/console.md (so a test run never modifies the work tree).
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { PNG } from 'pngjs';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { TaskStatus } from '@taskapi/domain';
import { startHttpsReceiver, testCa, waitFor } from '@taskapi/testing';
import { CONSOLE_CSP } from '../src/console/pages';
import { API_ERRORS } from '../src/errors';
import { createKey, seedAccount, seedGrant, startApi, withKey, type TestAccount, type TestApi } from './support/harness';
import { waitForText } from './support/browser';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS
  ? path.join(__dirname, '..', '..', '..', 'docs', 'screenshots')
  : path.join(os.tmpdir(), 'taskapi-screenshots');
// Closed network, running as root: no sandbox, no GPU, nothing that phones home.
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
// Stored in the payload and the result: must show up as text, never as markup.
const HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=1</script>';

// Browser globals used inside page.evaluate() callbacks: the test program compiles without the DOM lib.
declare const document: any, navigator: any, window: any, localStorage: any, sessionStorage: any, getComputedStyle: any;

jest.setTimeout(60_000);

/**
 * A request with the path exactly as given (fetch and browsers %-encode `<`, `>` and `"`; an
 * attacker's own client need not).
 */
function rawRequest(baseUrl: string, method: string, rawPath: string, body?: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${baseUrl}/`, { method, path: rawPath, headers: body ? { 'content-type': 'application/x-www-form-urlencoded' } : {} }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A 128×96 gradient PNG, as the image engine would write one. */
function samplePng(): Buffer {
  const png = new PNG({ width: 128, height: 96 });
  for (let i = 0; i < 128 * 96; i++) {
    png.data[i * 4] = (i % 128) * 2;
    png.data[i * 4 + 1] = 120;
    png.data[i * 4 + 2] = 255 - Math.floor(i / 128) * 2;
    png.data[i * 4 + 3] = 255;
  }
  return PNG.sync.write(png);
}

describe('console pages in a real browser', () => {
  let api: TestApi;
  let account: TestAccount;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let usableGrant: string;
  let seededTaskId: string;
  let paidTaskId: string;
  const logs = new PassThrough();
  let logText = '';
  const requestedUrls: string[] = [];
  const browserProblems: string[] = [];
  const secrets: string[] = [];

  const shot = (name: string, target: Page = page) => target.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });

  async function typeInto(label: string, text: string, target: Page = page): Promise<void> {
    await target.getByLabel(label, { exact: true }).click();
    await target.keyboard.press('ControlOrMeta+A');
    await target.keyboard.type(text);
  }

  async function logIn(password: string, target: Page = page, email = account.email): Promise<void> {
    await typeInto('E-mail', email, target);
    await typeInto('Password', password, target);
    await target.keyboard.press('Enter');
  }

  beforeAll(async () => {
    logs.on('data', (chunk: Buffer) => (logText += chunk.toString()));
    // The test CA is trusted for outgoing webhooks, so a test webhook can reach a local HTTPS receiver.
    api = await startApi({ LOG_LEVEL: 'info' }, { logStream: logs, egressCa: testCa().caCert });
    account = await seedAccount(api, { credits: 100, label: 'console-ui' });
    // Four grants: only the first may take a new key.
    usableGrant = await seedGrant(api, account, 50);
    const boundGrant = await seedGrant(api, account, 30);
    await createKey(api, account, { type: 'trial', grant_id: boundGrant });
    await seedGrant(api, account, 40, -86_400_000);
    const emptyGrant = await seedGrant(api, account, 10);
    await api.deps.db.prisma.trialGrant.update({ where: { id: emptyGrant }, data: { quotaRemaining: 0 } });
    // A task made before the browser arrives, so the dashboard has something to show.
    const setupKey = await createKey(api, account, { type: 'paid' });
    const created = await api.req('POST', '/api/tasks/video-generation', { headers: withKey(setupKey), body: { prompt: 'a paper boat in the rain', duration_seconds: 3, fairness_key: 'user-42' } });
    expect(created.status).toBe(201);
    seededTaskId = created.body.public_id;
    secrets.push(setupKey.plaintext, account.token);

    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: install Debian's chromium package (apt-get install chromium; .ci/run does)`);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1, permissions: ['clipboard-read', 'clipboard-write'] });
    page = await context.newPage();
    page.setDefaultTimeout(10_000);
    page.on('request', (r) => requestedUrls.push(r.url()));
    page.on('pageerror', (err) => browserProblems.push(`page error: ${err.message}`));
    page.on('console', (m) => {
      if (m.type() === 'error' && !/Failed to load resource: the server responded with a status of 40[149]/.test(m.text())) browserProblems.push(`console: ${m.text()}`);
    });
  });

  afterAll(async () => {
    await browser?.close();
    await api?.close();
  });

  it('sends a visitor without a session to the login page; a wrong password is refused; login lands on the dashboard', async () => {
    const res = await page.goto(`${api.url}/app`);
    expect(res?.headers()['content-security-policy']).toBe(CONSOLE_CSP);
    expect(CONSOLE_CSP).toContain("script-src 'self';");
    expect(CONSOLE_CSP).not.toContain('unsafe-inline');
    await page.waitForURL(`${api.url}/app/login?next=%2Fapp`);
    await waitFor(() => page.getByLabel('E-mail', { exact: true }).evaluate((e) => e === document.activeElement));

    await logIn('not the password');
    await waitForText(page.getByRole('alert'), 'Invalid email or password.');
    await shot('login');

    await logIn(account.password);
    await page.waitForURL(`${api.url}/app`);
    const cookies = await context.cookies();
    const session = cookies.find((c) => c.name === 'session');
    expect(session).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    secrets.push(session!.value);
    // HttpOnly: the page's scripts cannot read it, and nothing is kept in storage.
    expect(await page.evaluate(() => [document.cookie, localStorage.length, sessionStorage.length])).toEqual(['', 0, 0]);
  });

  it('dashboard: paid balance, trial grants with remaining quota and expiry, recent tasks; readable at phone width', async () => {
    await waitForText(page.locator('#account-email'), account.email);
    await waitForText(page.locator('#paid-balance'), /^90$/); // 100 less the 10-credit video task
    const grants = page.locator('#grants');
    await waitForText(grants, usableGrant);
    expect(await grants.getByRole('row').count()).toBe(5); // header + four grants
    const usableRow = grants.getByRole('row').filter({ hasText: usableGrant });
    expect(await usableRow.innerText()).toMatch(/50\s+of 50/);
    expect(await usableRow.getByText('usable').count()).toBe(1);
    expect(await grants.getByText('expired', { exact: true }).count()).toBe(1);
    expect(await grants.getByText('exhausted', { exact: true }).count()).toBe(1);
    const recent = page.locator('#recent-tasks');
    await waitForText(recent, seededTaskId);
    await waitForText(recent.getByRole('row').filter({ hasText: seededTaskId }), 'queued');
    // Waiting by fairness key: the queued video task under its key (no worker runs here).
    const keys = page.locator('#fairness-keys');
    await waitForText(keys, 'user-42');
    expect((await keys.getByRole('row').filter({ hasText: 'user-42' }).innerText()).split(/\s+/)).toEqual(['video-generation', 'user-42', '1', '0']);
    await shot('dashboard');

    const phone = await context.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto(`${api.url}/app`);
    await waitForText(phone.locator('#recent-tasks'), seededTaskId);
    await waitForText(phone.locator('#grants'), usableGrant);
    expect(await phone.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await shot('dashboard-phone', phone);
    await phone.close();
  });

  it('API keys, paid tab: creates a key, shows it once with a "store it now" notice, copies it; the key works on /api/tasks', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.waitForURL(`${api.url}/app/api-keys`);
    await expect(page.getByRole('tab', { name: 'Paid keys' }).getAttribute('aria-selected')).resolves.toBe('true');
    const paidKeysBefore = (await api.req('GET', '/api/keys?type=paid', { headers: account.auth })).body.data.length as number;
    await waitFor(async () => (await page.locator('#paid-keys').getByRole('row').count()) === paidKeysBefore + 1);

    await page.getByRole('button', { name: 'Create paid key' }).click();
    const newKey = page.locator('#new-key');
    await newKey.waitFor({ state: 'visible' });
    await waitForText(newKey, 'Store it now.');
    const plaintext = await page.locator('#new-key-value').innerText();
    expect(plaintext).toMatch(/^sk-live-[A-Za-z0-9]{32,}$/);
    secrets.push(plaintext);
    // Header row plus every paid key, the new one included.
    await waitFor(async () => (await page.locator('#paid-keys').getByRole('row').count()) === paidKeysBefore + 2);

    await page.getByRole('button', { name: 'Copy key' }).click();
    await waitForText(page.getByRole('status'), 'Copied to the clipboard.');
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(plaintext);
    await shot('api-keys-paid');

    const created = await api.req('POST', '/api/tasks/image-generation', {
      headers: withKey(plaintext),
      body: { prompt: 'a lighthouse at dusk', width: 128, height: 96, callback_url: 'https://receiver.example.test/hooks', payload: { order: 'A-1', note: HOSTILE } },
    });
    expect({ status: created.status, body: created.status === 201 ? null : created.body }).toEqual({ status: 201, body: null });
    paidTaskId = created.body.public_id;

    await page.getByRole('button', { name: 'I have stored it' }).click();
    await newKey.waitFor({ state: 'hidden' });
    expect(await page.locator('#new-key-value').innerText()).toBe('');
  });

  it('API keys: sets a spend limit and shows what the key spent; the API refuses past it; changes the period; removes it', async () => {
    const key = await createKey(api, account, { type: 'paid' });
    secrets.push(key.plaintext);
    expect((await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'spend two' } })).status).toBe(201);
    await page.goto(`${api.url}/app/api-keys`);
    const row = page.locator('#paid-keys tr', { hasText: key.prefix });
    await waitForText(row, '2 spent this month (UTC), no limit');

    await row.getByRole('button', { name: `Edit spend limit of key ${key.prefix}` }).click();
    await typeInto('Credits', '3');
    await row.getByRole('button', { name: 'Save limit' }).click();
    await waitForText(page.getByRole('status'), `Key ${key.prefix} may now spend 3 credits per day.`);
    await waitForText(row, '2 of 3 spent today (UTC)');
    await shot('api-keys-spend-limit');
    const refused = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'one too many' } });
    expect(refused.body).toEqual({ message: "This key's spend limit is reached.", limit: 3, period: 'day', spent: 2 });

    await row.getByRole('button', { name: `Edit spend limit of key ${key.prefix}` }).click();
    await page.getByLabel('Period', { exact: true }).selectOption('month');
    await typeInto('Credits', '10');
    await page.keyboard.press('Enter');
    await waitForText(row, '2 of 10 spent this month (UTC)');

    // Out of range is refused by the form itself (the API's 400 for it is tested in spend-limits.test.ts); then remove the limit.
    await row.getByRole('button', { name: `Edit spend limit of key ${key.prefix}` }).click();
    await typeInto('Credits', '2000000000');
    await row.getByRole('button', { name: 'Save limit' }).click();
    expect(await page.getByLabel('Credits', { exact: true }).evaluate((input: any) => input.validity.rangeOverflow)).toBe(true);
    expect((await api.req('GET', '/api/keys?type=paid', { headers: account.auth })).body.data.find((k: { id: string }) => k.id === key.id).spend_limit).toEqual({ credits: 10, period: 'month' });
    await row.getByRole('button', { name: 'Remove limit' }).click();
    await waitForText(row, '2 spent this month (UTC), no limit');
    expect((await api.req('GET', '/api/keys?type=paid', { headers: account.auth })).body.data.find((k: { id: string }) => k.id === key.id)).toMatchObject({ spend_limit: null, spent: 2 });
    expect((await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'free again' } })).status).toBe(201);
  });

  it('API keys, trial tab by keyboard: only usable, unbound grants are offered; create, show, reissue (old key invalid), revoke', async () => {
    await page.getByRole('tab', { name: 'Paid keys' }).focus();
    await page.keyboard.press('ArrowRight');
    const trialTab = page.getByRole('tab', { name: 'Trial keys' });
    await waitFor(async () => (await trialTab.getAttribute('aria-selected')) === 'true');
    expect(await trialTab.evaluate((e) => e === document.activeElement)).toBe(true);
    await page.locator('#panel-trial').waitFor({ state: 'visible' });
    expect(await page.locator('#panel-paid').isHidden()).toBe(true);
    expect(new URL(page.url()).hash).toBe('#trial');

    const grantSelect = page.getByLabel('Trial grant');
    expect(await grantSelect.locator('option').evaluateAll((os) => os.map((o: any) => o.value))).toEqual([usableGrant]);
    await page.getByRole('button', { name: 'Create trial key' }).click();
    await page.locator('#new-key').waitFor({ state: 'visible' });
    const trialKey = await page.locator('#new-key-value').innerText();
    expect(trialKey).toMatch(/^sk-test-[A-Za-z0-9]{32,}$/);
    secrets.push(trialKey);
    expect((await api.req('GET', '/api/tasks', { headers: withKey(trialKey) })).status).toBe(200);
    // The grant is bound now: nothing left to choose.
    await page.locator('#no-grant').waitFor({ state: 'visible' });
    expect(await grantSelect.isHidden()).toBe(true);

    const prefix = trialKey.slice(0, 'sk-test-'.length + 8);
    const row = page.locator('#trial-keys').getByRole('row').filter({ hasText: prefix });
    await row.getByRole('button', { name: `Show key ${prefix}` }).click();
    await waitForText(row.locator('.revealed-key'), trialKey);
    await shot('api-keys-trial');
    await row.getByRole('button', { name: 'Hide' }).click();
    await row.locator('.revealed-key').waitFor({ state: 'detached' });

    // Reissue: Escape cancels, the confirm button confirms.
    const dialog = page.getByRole('dialog');
    await row.getByRole('button', { name: `Reissue key ${prefix}` }).click();
    await dialog.waitFor({ state: 'visible' });
    await waitForText(dialog, 'stops working immediately');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });
    expect((await api.req('GET', '/api/tasks', { headers: withKey(trialKey) })).status).toBe(200);

    await row.getByRole('button', { name: `Reissue key ${prefix}` }).click();
    await dialog.getByRole('button', { name: 'Reissue key' }).click();
    await waitFor(async () => {
      const value = await page.locator('#new-key-value').innerText();
      return value.startsWith('sk-test-') && value !== trialKey;
    });
    const reissued = await page.locator('#new-key-value').innerText();
    secrets.push(reissued);
    const old = await api.req('GET', '/api/tasks', { headers: withKey(trialKey) });
    expect({ status: old.status, body: old.body }).toEqual({ status: 401, body: { message: 'Invalid API key.' } });
    expect((await api.req('GET', '/api/tasks', { headers: withKey(reissued) })).status).toBe(200);
    await waitForText(row, 'revoked');

    // Revoke the replacement, confirming with the keyboard (focus starts on Cancel).
    const newPrefix = reissued.slice(0, 'sk-test-'.length + 8);
    const newRow = page.locator('#trial-keys').getByRole('row').filter({ hasText: newPrefix });
    await newRow.getByRole('button', { name: `Revoke key ${newPrefix}` }).click();
    await dialog.waitFor({ state: 'visible' });
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Revoke key');
    await page.keyboard.press('Enter');
    await waitForText(newRow, 'revoked');
    const revoked = await api.req('GET', '/api/tasks', { headers: withKey(reissued) });
    expect({ status: revoked.status, body: revoked.body }).toEqual({ status: 401, body: { message: 'Invalid API key.' } });
    await waitForText(page.getByRole('status'), `Key ${newPrefix} revoked.`);
  });

  it('webhook: shows and rotates the secret after a warning; lists the task\'s delivery', async () => {
    // Finish the paid task the way the worker does: result, a file, and the webhook outbox row.
    const image = samplePng();
    fs.mkdirSync(path.join(api.config.filesDir, paidTaskId), { recursive: true });
    fs.writeFileSync(path.join(api.config.filesDir, paidTaskId, 'image.png'), image);
    const finished = await api.deps.taskLifecycle.repair.end(paidTaskId, { status: TaskStatus.completed, result: { caption: HOSTILE }, files: [{ name: 'image.png', content_type: 'image/png', size: image.length }] });
    expect(finished?.delivery_id).toMatch(/^whd_/);

    const before = (await api.req('GET', '/api/webhook-secret', { headers: account.auth })).body.webhook_secret as string;
    secrets.push(before);
    await page.getByRole('link', { name: 'Webhook' }).click();
    await page.waitForURL(`${api.url}/app/webhook`);
    const secretBox = page.locator('#secret');
    await waitForText(secretBox, /^whsec_•+$/);
    await page.getByRole('button', { name: 'Show secret' }).click();
    await waitForText(secretBox, before);

    await page.getByRole('button', { name: 'Rotate secret…' }).click();
    const dialog = page.getByRole('dialog');
    await waitForText(dialog, 'The current secret stops working immediately');
    await dialog.getByRole('button', { name: 'Rotate now' }).click();
    await waitForText(page.getByRole('status'), 'Secret rotated.');
    const after = (await api.req('GET', '/api/webhook-secret', { headers: account.auth })).body.webhook_secret as string;
    secrets.push(after);
    expect(after).not.toBe(before);
    await waitForText(secretBox, after);

    const deliveries = page.locator('#deliveries');
    const row = deliveries.getByRole('row').filter({ hasText: paidTaskId });
    await waitForText(row, 'pending');
    await waitForText(row, '0 attempts');
    await waitForText(row, 'https://receiver.example.test/hooks');
    await shot('webhook');
    // No dispatcher runs here, so the delivery is still pending: no Resend (the API would refuse it).
    const deliveryId = finished!.delivery_id!;
    const resendButton = row.getByRole('button', { name: `Resend delivery ${deliveryId}` });
    await waitForText(row, 'In progress');
    expect(await resendButton.count()).toBe(0);
    const refused = await api.req('POST', `/api/webhook-deliveries/${deliveryId}/resend`, { headers: account.auth });
    expect({ status: refused.status, message: refused.body.message }).toEqual({ status: 409, message: API_ERRORS.DELIVERY_PENDING.message });

    // Given up after its retries, as the dispatcher leaves it: now Resend is offered, and works.
    await api.deps.db.pool.query(`UPDATE webhook_deliveries SET state = 'failed', next_attempt_at = NULL, completed_at = now() WHERE id = $1`, [deliveryId]);
    await page.getByRole('button', { name: 'Show deliveries' }).click();
    await waitForText(row.locator('td[data-label="State"]'), 'failed');
    await resendButton.click();
    await waitForText(page.getByRole('status'), `Delivery ${deliveryId} queued for resending.`);
    await waitForText(row.locator('td[data-label="State"]'), 'pending');
    await waitForText(row, 'In progress');
    expect(await resendButton.count()).toBe(0);
    expect((await api.deps.db.pool.query('SELECT state FROM webhook_deliveries WHERE id = $1', [deliveryId])).rows).toEqual([{ state: 'pending' }]);

    // A task without deliveries says so, with a way back to all of them.
    await page.getByLabel('Task id').fill(seededTaskId);
    await page.getByRole('button', { name: 'Show deliveries' }).click();
    await waitForText(deliveries, `No webhook deliveries for task ${seededTaskId}.`);
    expect(new URL(page.url()).search).toBe(`?public_id=${seededTaskId}`);
    await deliveries.getByRole('button', { name: 'Show all deliveries' }).click();
    await waitForText(row, paidTaskId);
    expect(await page.getByLabel('Task id').inputValue()).toBe('');
    expect(new URL(page.url()).search).toBe('');
  });

  it('webhook: sends a test webhook and shows status, latency and the answer as text', async () => {
    const receiver = await startHttpsReceiver((req) => (req.path === '/down' ? { status: 503, body: 'maintenance' } : { status: 200, body: HOSTILE }));
    try {
      await page.getByLabel('Receiver URL').fill(receiver.url('/hook'));
      await page.getByRole('button', { name: 'Send test webhook' }).click();
      await waitForText(page.locator('#test-outcome'), 'Delivered: HTTP 200');
      const [got] = await receiver.waitForCount('/hook', 1);
      expect(JSON.parse(got!.body.toString('utf8')).public_id).toMatch(/^task_test/);
      expect(await page.locator('#test-status').innerText()).toBe('200');
      expect(await page.locator('#test-latency').innerText()).toMatch(/^\d+ ms$/);
      // The receiver's answer is markup: shown as text, never run.
      expect(await page.locator('#test-excerpt').innerText()).toBe(HOSTILE);
      expect(await page.evaluate(() => window.__pwned)).toBeUndefined();
      await shot('webhook-test');

      await page.getByLabel('Receiver URL').fill(receiver.url('/down'));
      await page.getByRole('button', { name: 'Send test webhook' }).click();
      await waitForText(page.locator('#test-outcome'), 'Not delivered: HTTP 503');
      expect(await page.locator('#test-excerpt').innerText()).toBe('maintenance');
    } finally {
      await receiver.close();
    }
  });

  it('tasks: the list filters by status; the detail shows status, payload and result as text, and previews the image', async () => {
    await page.getByRole('link', { name: 'Tasks' }).click();
    await page.waitForURL(`${api.url}/app/tasks`);
    const list = page.locator('#task-list');
    await waitForText(list, paidTaskId);
    await waitForText(list, seededTaskId);
    await waitForText(list.getByRole('row').filter({ hasText: paidTaskId }), 'completed');

    await page.getByLabel('Status').selectOption('20');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await waitFor(async () => !(await list.innerText()).includes(seededTaskId));
    await waitForText(list, paidTaskId);
    expect(new URL(page.url()).search).toBe('?status=20');
    await page.getByLabel('Status').selectOption('');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await waitForText(list, seededTaskId);
    await shot('tasks');

    // Filters that match nothing say so (not "no tasks yet") and offer to clear them.
    await page.getByLabel('Status').selectOption('40');
    await page.getByLabel('Kind').selectOption('face-detection');
    await page.getByRole('button', { name: 'Apply filters' }).click();
    await waitForText(list, 'No tasks match these filters.');
    expect(await list.innerText()).not.toContain('No tasks yet');
    expect(new URL(page.url()).search).toBe('?status=40&kind=face-detection');
    await shot('tasks-filtered-empty');
    await list.getByRole('button', { name: 'Clear filters' }).click();
    await waitForText(list, seededTaskId);
    await waitForText(list, paidTaskId);
    expect(await page.getByLabel('Status').inputValue()).toBe('');
    expect(await page.getByLabel('Kind').inputValue()).toBe('');
    expect(new URL(page.url()).search).toBe('');
    expect(await page.getByLabel('Status').evaluate((e) => e === document.activeElement)).toBe(true);

    await list.getByRole('link', { name: paidTaskId }).click();
    await page.waitForURL(`${api.url}/app/tasks/${paidTaskId}`);
    await waitForText(page.locator('#task-summary'), 'completed');
    await waitForText(page.locator('#task-payload'), JSON.stringify(HOSTILE));
    await waitForText(page.locator('#task-result'), JSON.stringify(HOSTILE));
    const img = page.getByRole('img', { name: 'Output image image.png' });
    await img.waitFor();
    await waitFor(() => img.evaluate((e: any) => e.complete && e.naturalWidth === 128));
    expect(await img.getAttribute('src')).toBe(`${api.url}/api/console/tasks/${paidTaskId}/files/image.png`);
    // Customer data never became markup.
    expect(await page.evaluate(() => window.__pwned)).toBeUndefined();
    expect(await page.locator('main img').count()).toBe(1);
    await shot('task-detail');

    // A task created without a callback URL says why it has no webhook (a trailing slash is the same page).
    await page.goto(`${api.url}/app/tasks/${seededTaskId}/`);
    await waitForText(page.locator('#task-summary'), 'queued');
    await waitForText(page.locator('#task-deliveries'), 'No webhooks: this task was created without a callback_url.');
  });

  it('an account with nothing yet: "no tasks yet", the trial tab\'s own empty state; Reissue only where it can work', async () => {
    const fresh = await seedAccount(api, { credits: 0, label: 'console-ui-empty' });
    const freshContext = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
    const p = await freshContext.newPage();
    p.setDefaultTimeout(10_000);
    await p.goto(`${api.url}/app/tasks`);
    await p.waitForURL(`${api.url}/app/login?next=%2Fapp%2Ftasks`);
    await logIn(fresh.password, p, fresh.email);
    await p.waitForURL(`${api.url}/app/tasks`);
    const list = p.locator('#task-list');
    await waitForText(list, 'No tasks yet. Create one with a paid or trial API key.');
    expect(await list.getByRole('button', { name: 'Clear filters' }).count()).toBe(0);
    expect(await list.innerText()).not.toContain('match these filters');

    // No grant at all: the trial tab explains trial grants, not "each grant has expired".
    await p.goto(`${api.url}/app/api-keys#trial`);
    const trialPanel = p.locator('#panel-trial');
    await trialPanel.waitFor({ state: 'visible' });
    // The empty state is in the page from the start, hidden: it shows once the grants have loaded
    // (its text alone says nothing: a hidden element's innerText is its text too).
    await p.locator('#no-grants').waitFor({ state: 'visible' });
    await waitForText(p.locator('#no-grants'), 'You have no trial grants.');
    expect(await p.locator('#no-grant').isHidden()).toBe(true);
    expect(await p.locator('#create-trial-form').isHidden()).toBe(true);
    const trialText = await trialPanel.innerText();
    expect(trialText).not.toMatch(/paid keys yet|each one has expired|Nothing here yet/);
    await shot('api-keys-trial-empty', p);
    await p.getByRole('tab', { name: 'Paid keys' }).click();
    await waitForText(p.locator('#paid-keys'), 'No paid keys yet.');

    // A grant that has run out, with its key: Show and Revoke, but no Reissue (the API refuses it: 422).
    const grant = await seedGrant(api, fresh, 5);
    const key = await createKey(api, fresh, { type: 'trial', grant_id: grant });
    secrets.push(key.plaintext, fresh.token);
    await api.deps.db.prisma.trialGrant.update({ where: { id: grant }, data: { quotaRemaining: 0 } });
    const reissued = await api.req('POST', `/api/keys/${key.id}/reissue`, { headers: fresh.auth });
    expect({ status: reissued.status, message: reissued.body.message }).toEqual({ status: 422, message: API_ERRORS.GRANT_EXHAUSTED.message });
    await p.reload();
    await p.getByRole('tab', { name: 'Trial keys' }).click();
    const row = p.locator('#trial-keys').getByRole('row').filter({ hasText: key.prefix });
    await row.getByRole('button', { name: `Revoke key ${key.prefix}` }).waitFor();
    expect(await row.getByRole('button', { name: `Show key ${key.prefix}` }).count()).toBe(1);
    expect(await row.getByRole('button', { name: `Reissue key ${key.prefix}` }).count()).toBe(0);
    // Now the account has a grant, but none that can take a key: that notice, not the "no grants" one.
    await p.locator('#no-grant').waitFor({ state: 'visible' });
    expect(await p.locator('#no-grants').isHidden()).toBe(true);
    await freshContext.close();
  });

  it('an unknown page under /app is the console\'s HTML 404 page with a way home; /api paths stay JSON', async () => {
    // A visitor without a session: the 404 page needs none, and its link leads to the (login-guarded) home.
    const visitorContext = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
    const visitor = await visitorContext.newPage();
    visitor.setDefaultTimeout(10_000);
    for (const unknown of ['/app/nope', '/app/tasks/task_x/files/y', '/app/api-keys/paid/new', '/app/assets/missing.js']) {
      const res = await visitor.goto(`${api.url}${unknown}`);
      expect({ unknown, status: res?.status(), type: res?.headers()['content-type'] }).toEqual({ unknown, status: 404, type: 'text/html; charset=utf-8' });
      expect(res?.headers()['content-security-policy']).toBe(CONSOLE_CSP);
      await waitForText(visitor.getByRole('heading', { level: 1 }), 'Page not found');
      expect(await visitor.locator('main code').innerText()).toBe(unknown);
      expect(await visitor.title()).toBe('Page not found · Task API console');
    }
    // Styled like the console: its stylesheet is applied (the top bar's colour).
    expect(await visitor.locator('.topbar').evaluate((e) => getComputedStyle(e).backgroundColor)).toBe('rgb(20, 33, 61)');
    await shot('not-found', visitor);
    await visitor.getByRole('link', { name: 'Go to the console home' }).click();
    await visitor.waitForURL(`${api.url}/app/login?next=%2Fapp`);
    await visitorContext.close();

    // Whatever the path holds is shown as text, never markup.
    const hostile = '/app/"><img src=x onerror=alert(1)><script>alert(2)</script>?q=<b>';
    const raw = await rawRequest(api.url, 'GET', hostile.replace(/ /g, '%20'));
    expect(raw.status).toBe(404);
    expect(raw.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(raw.text).not.toMatch(/<img|<script>alert|<b>/);
    expect(raw.text).toContain('<code>/app/&#34;&#62;&#60;img%20src=x%20onerror=alert(1)&#62;&#60;script&#62;alert(2)&#60;/script&#62;</code>');
    // A long path is cut short in the page.
    const long = await rawRequest(api.url, 'GET', `/app/${'a'.repeat(5000)}`);
    expect(long.status).toBe(404);
    expect(long.text).toContain(`<code>/app/${'a'.repeat(195)}…</code>`);
    // An address Express cannot decode is a 400 page, not JSON; a form posted to a page is a 405 page.
    const broken = await api.req('GET', '/app/tasks/%E0%A4%A');
    expect({ status: broken.status, type: broken.headers.get('content-type'), json: broken.body }).toEqual({ status: 400, type: 'text/html; charset=utf-8', json: undefined });
    expect(broken.text).toContain('Bad address');
    const posted = await rawRequest(api.url, 'POST', '/app/login', 'email=a%40example.test&password=secret');
    expect({ status: posted.status, allow: posted.headers.allow, type: posted.headers['content-type'] }).toEqual({ status: 405, allow: 'GET, HEAD', type: 'text/html; charset=utf-8' });
    expect(posted.text).toContain('Go to the console home');
    expect(posted.text).not.toContain('secret');

    // The API keeps its JSON 404.
    for (const unknown of ['/api/nope', '/api/console/nope', '/appx']) {
      const res = await api.req('GET', unknown);
      expect({ unknown, status: res.status, type: res.headers.get('content-type'), body: res.body }).toEqual({
        unknown,
        status: 404,
        type: 'application/json; charset=utf-8',
        body: { message: API_ERRORS.NOT_FOUND.message },
      });
    }
  });

  it('console task API: session only (X-Api-Key refused); no secret in any URL or log line; no CSP violation', async () => {
    const paidKey = secrets.find((s) => s.startsWith('sk-live-'))!;
    for (const p of ['/api/console/tasks', `/api/console/tasks/${paidTaskId}`, `/api/console/tasks/${paidTaskId}/files/image.png`]) {
      const withApiKey = await api.req('GET', p, { headers: withKey(paidKey) });
      expect({ p, status: withApiKey.status, body: withApiKey.body }).toEqual({ p, status: 401, body: { message: API_ERRORS.SESSION_ONLY.message } });
      const both = await api.req('GET', p, { headers: { ...withKey(paidKey), ...account.auth } });
      expect({ p, status: both.status }).toEqual({ p, status: 401 });
      expect((await api.req('GET', p, { headers: account.auth })).status).toBe(200);
    }
    // And the task API stays API-key only.
    expect((await api.req('GET', `/api/tasks/${paidTaskId}`, { headers: account.auth })).body).toEqual({ message: 'API key required.' });

    expect(requestedUrls.length).toBeGreaterThan(20);
    expect(secrets.length).toBeGreaterThanOrEqual(8);
    for (const secret of secrets) {
      expect(requestedUrls.filter((u) => u.includes(secret))).toEqual([]);
      expect(logText.includes(secret)).toBe(false);
    }
    expect(requestedUrls.filter((u) => /sk-(live|test)-|whsec_/.test(u))).toEqual([]);
    expect(logText).toContain('"path":"/api/keys/'); // the log was captured
    expect(browserProblems).toEqual([]);
  });

  it('an ended session and logging out both send you back to the login page', async () => {
    // The session ends on the server (as at expiry): the next page load goes to the login page.
    const token = (await context.cookies()).find((c) => c.name === 'session')!.value;
    expect((await api.req('POST', '/api/auth/logout', { headers: { authorization: `Bearer ${token}` } })).status).toBe(204);
    await page.getByRole('link', { name: 'Dashboard' }).click();
    await page.waitForURL(`${api.url}/app/login?next=%2Fapp`);

    await logIn(account.password);
    await page.waitForURL(`${api.url}/app`);
    await waitForText(page.locator('#account-email'), account.email);

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(`${api.url}/app/login`);
    expect((await context.cookies()).find((c) => c.name === 'session')).toBeUndefined();
    await page.goto(`${api.url}/app/api-keys`);
    await page.waitForURL(`${api.url}/app/login?next=%2Fapp%2Fapi-keys`);
    expect(browserProblems).toEqual([]);
  });
});
