// The console's pictures in a real headless Chromium (Debian's `chromium` via playwright-core)
// against a real API on PostgreSQL and Redis: the dashboard's usage charts, and a task's page with
// its result as people look at it (thumbnail, video player, face boxes on the uploaded image) and
// every webhook attempt. Screenshots go to a temp folder, or with UPDATE_SCREENSHOTS=1 to
// docs/screenshots/ for docs/console.md.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { PNG } from 'pngjs';
import { chromium, type Browser, type Locator, type Page } from 'playwright-core';
import { TaskStatus } from '@taskapi/domain';
import { type FinishTaskInput } from '@taskapi/task-lifecycle';
import { newId } from '@taskapi/ids';
import { waitFor } from '@taskapi/testing';
import { createKey, seedAccount, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from './support/harness';
import { waitForText, watchConsolePage } from './support/browser';

const CHROMIUM = '/usr/bin/chromium';
const SCREENSHOTS = process.env.UPDATE_SCREENSHOTS
  ? path.join(__dirname, '..', '..', '..', 'docs', 'screenshots')
  : path.join(os.tmpdir(), 'taskapi-screenshots');
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const FIXTURES = path.join(__dirname, '..', '..', '..', 'test', 'fixtures');
const DAY_MS = 86_400_000;
const KINDS = ['image-generation', 'video-generation', 'face-detection'] as const;
type Kind = (typeof KINDS)[number];

// Browser globals used inside evaluate() callbacks: the test program compiles without the DOM lib.
declare const document: any;

jest.setTimeout(90_000);

/** The astronaut photo twice, the second mirrored: a 1024×512 PNG with two faces. */
function twoAstronauts(): Buffer {
  const src = PNG.sync.read(fs.readFileSync(path.join(FIXTURES, 'astronaut.png')));
  const out = new PNG({ width: 1024, height: 512 });
  for (let y = 0; y < 512; y++) {
    for (let x = 0; x < 1024; x++) {
      const from = (y * 512 + (x < 512 ? x : 1023 - x)) * 4;
      const to = (y * 1024 + x) * 4;
      for (let c = 0; c < 3; c++) out.data[to + c] = src.data[from + c]!;
      out.data[to + 3] = 255;
    }
  }
  return PNG.sync.write(out);
}
// What the built-in engine (SSD MobileNet v1) finds in that image.
const TWO_FACES = [
  { x: 751, y: 56, width: 89, height: 120, score: 0.992 },
  { x: 184, y: 56, width: 86, height: 119, score: 0.988 },
];

/** A 256×192 picture, as the image engine would write one: a sky gradient with a sun. */
function picture(): Buffer {
  const png = new PNG({ width: 256, height: 192 });
  for (let y = 0; y < 192; y++) {
    for (let x = 0; x < 256; x++) {
      const i = (y * 256 + x) * 4;
      const sun = (x - 180) ** 2 + (y - 60) ** 2 < 900;
      png.data[i] = sun ? 255 : 40 + y;
      png.data[i + 1] = sun ? 200 : 90 + Math.floor(y / 2);
      png.data[i + 2] = sun ? 60 : 200 - Math.floor(y / 3);
      png.data[i + 3] = 255;
    }
  }
  return PNG.sync.write(png);
}

/** A 2-second 320×180 H.264 MP4 at 8 fps, encoded the way the video engine does (system ffmpeg). */
function video(): Buffer {
  const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'taskapi-video-')), 'video.mp4');
  const run = spawnSync('ffmpeg', ['-hide_banner', '-loglevel', 'error', '-nostdin', '-f', 'lavfi', '-i', 'testsrc2=size=320x180:rate=8', '-t', '2',
    '-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p', '-movflags', '+faststart', '-f', 'mp4', out], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`ffmpeg failed (${run.status}): ${run.stderr} (install ffmpeg; .ci/run does)`);
  return fs.readFileSync(out);
}

const isoDay = (daysAgo: number) => {
  const now = new Date();
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - daysAgo * DAY_MS).toISOString().slice(0, 10);
};

/** Tasks seeded per day (days ago 1..29) and kind: uneven, with idle days, so the chart has shape. */
function seededCount(daysAgo: number, kind: Kind): number {
  if (daysAgo === 0 || daysAgo === 5 || daysAgo === 6 || daysAgo === 12 || daysAgo === 13) return 0;
  const trend = Math.round(12 + 10 * Math.sin(daysAgo / 4) + (29 - daysAgo) / 2);
  if (kind === 'image-generation') return trend;
  if (kind === 'video-generation') return daysAgo % 3 === 0 ? Math.round(trend / 3) : 0;
  return daysAgo % 2 === 0 ? Math.round(trend / 2) : 2;
}

describe('console usage charts and task details in a real browser', () => {
  let api: TestApi;
  let account: TestAccount;
  let key: CreatedKey;
  let browser: Browser;
  let page: Page;
  const browserProblems: string[] = [];
  const shot = (name: string, target: Page | Locator = page) => target.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), ...('goto' in target ? { fullPage: true } : {}) });

  async function createTask(kind: Kind, body: Record<string, unknown>): Promise<string> {
    const res = await api.req('POST', `/api/tasks/${kind}`, { headers: withKey(key), body });
    if (res.status !== 201) throw new Error(`create ${kind}: ${res.status} ${res.text}`);
    return res.body.public_id as string;
  }

  /**
   * Creates a face-detection task from an uploaded image, on a connection of its own: a 1.3 MB body
   * written to a pooled keep-alive socket that the in-process server is just closing fails with
   * ECONNRESET (seen in this file, never with a fresh connection).
   */
  function uploadFaceTask(image: Buffer): Promise<string> {
    const body = JSON.stringify({ image_base64: image.toString('base64'), callback_url: 'https://receiver.example.test/hooks' });
    return new Promise((resolve, reject) => {
      const headers = { ...withKey(key), 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), connection: 'close' };
      const req = http.request(`${api.url}/api/tasks/face-detection`, { method: 'POST', headers, agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => (res.statusCode === 201 ? resolve(JSON.parse(text).public_id) : reject(new Error(`create face-detection: ${res.statusCode} ${text}`))));
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  /** Ends a task the way the worker does, with its output files written to the store first; returns the delivery id. */
  async function finish(publicId: string, input: FinishTaskInput, files: Record<string, { type: string; data: Buffer }> = {}): Promise<string | null> {
    if (Object.keys(files).length) fs.mkdirSync(path.join(api.config.filesDir, publicId), { recursive: true });
    for (const [name, f] of Object.entries(files)) fs.writeFileSync(path.join(api.config.filesDir, publicId, name), f.data);
    const withFiles = input.status === TaskStatus.completed ? { ...input, files: Object.entries(files).map(([name, f]) => ({ name, content_type: f.type, size: f.data.length })) } : input;
    // The worker stamps started_at when it claims the task: queued 1.2 s, then ran 3.4 s.
    await api.deps.db.pool.query(
      "UPDATE tasks SET created_at = now() - interval '4.6 seconds', started_at = now() - interval '3.4 seconds', status = 10 WHERE public_id = $1",
      [publicId],
    );
    const finished = await api.deps.taskLifecycle.repair.end(publicId, withFiles, account.id);
    if (!finished) throw new Error(`could not finish ${publicId}`);
    return finished.delivery_id ?? null;
  }

  async function logIn(target: Page, who: TestAccount): Promise<void> {
    await target.getByLabel('E-mail', { exact: true }).fill(who.email);
    await target.getByLabel('Password', { exact: true }).fill(who.password);
    await target.keyboard.press('Enter');
  }

  beforeAll(async () => {
    api = await startApi();
    account = await seedAccount(api, { credits: 5000, label: 'console-insights' });
    key = await createKey(api, account, { type: 'paid' });
    fs.mkdirSync(SCREENSHOTS, { recursive: true });
    if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} not found: install Debian's chromium package (apt-get install chromium; .ci/run does)`);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
    page = await context.newPage();
    page.setDefaultTimeout(15_000);
    watchConsolePage(page, browserProblems);
    await page.goto(`${api.url}/app/login`);
    await logIn(page, account);
    await page.waitForURL(`${api.url}/app`);
  });

  afterAll(async () => {
    await browser?.close();
    await api?.close();
  });

  it('dashboard: an account with no tasks sees an empty state, not empty axes', async () => {
    const fresh = await seedAccount(api, { label: 'console-insights-empty' });
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, deviceScaleFactor: 1 });
    const p = await context.newPage();
    await p.goto(`${api.url}/app/login?next=%2Fapp`);
    await logIn(p, fresh);
    await p.waitForURL(`${api.url}/app`);
    await waitForText(p.locator('#usage'), 'No tasks in the last 30 days.');
    expect(await p.locator('#usage svg').count()).toBe(0);
    await context.close();
  });

  it('dashboard: tasks per day stacked by kind, credits and failure rate per day, as SVG with a table alternative', async () => {
    // A month of usage, written as the task API would have left it: each kind's cost, some failed
    // (refunded: no credits) and some cancelled.
    const rows: Array<[string, Kind, number, number, string]> = [];
    for (let daysAgo = 1; daysAgo <= 29; daysAgo++) {
      for (const kind of KINDS) {
        for (let i = 0; i < seededCount(daysAgo, kind); i++) {
          const status = (i + daysAgo) % 11 === 0 ? 30 : (i + daysAgo) % 17 === 0 ? 40 : 20;
          const cost = { 'image-generation': 2, 'video-generation': 10, 'face-detection': 1 }[kind];
          rows.push([newId('task'), kind, status, cost, new Date(Date.parse(`${isoDay(daysAgo)}T00:00:00Z`) + ((i * 7919) % 86_000) * 1000).toISOString()]);
        }
      }
    }
    // In creation order, as the API would have inserted them (ids grow with time).
    rows.sort((a, b) => a[4].localeCompare(b[4]));
    await api.deps.db.pool.query(
      `INSERT INTO tasks (public_id, account_id, api_key_id, kind, status, input, cost, created_at, started_at, finished_at, error_code)
       SELECT p, $1, $2, k, s, '{"prompt":"seeded"}', c, t, t, t + interval '4 seconds', CASE WHEN s = 30 THEN 'engine_error' END
         FROM unnest($3::text[], $4::task_kind[], $5::smallint[], $6::int[], $7::timestamptz[]) AS r(p, k, s, c, t)`,
      [account.id, key.id, rows.map((r) => r[0]), rows.map((r) => r[1]), rows.map((r) => r[2]), rows.map((r) => r[3]), rows.map((r) => r[4])],
    );
    // And the balance they would have left (failed and cancelled tasks refunded).
    const spent = rows.reduce((n, r) => n + (r[2] === 20 ? r[3] : 0), 0);
    await api.deps.db.pool.query('UPDATE accounts SET paid_balance = paid_balance - $2 WHERE id = $1', [account.id, spent]);

    await page.reload();
    const usage = page.locator('#usage');
    const bars = usage.locator('svg.chart-tasks');
    await bars.waitFor();
    // One column per day of the window; one bar per day and kind that has tasks, as tall as its count says.
    expect(await bars.locator('g.day').count()).toBe(30);
    const expected = Array.from({ length: 30 }, (_, i) => 29 - i).flatMap((daysAgo) =>
      KINDS.filter((k) => seededCount(daysAgo, k) > 0).map((k) => ({ date: isoDay(daysAgo), kind: k, count: seededCount(daysAgo, k) })),
    );
    const drawn = await bars.locator('rect.bar').evaluateAll((rects: any[]) =>
      rects.map((r) => ({ date: r.parentNode.getAttribute('data-date'), kind: r.getAttribute('data-kind'), count: Number(r.getAttribute('data-count')), height: Number(r.getAttribute('height')) })),
    );
    expect(drawn.map(({ date, kind, count }) => ({ date, kind, count }))).toEqual(
      [...expected].sort((a, b) => a.date.localeCompare(b.date) || KINDS.indexOf(a.kind) - KINDS.indexOf(b.kind)),
    );
    // Heights are proportional to the counts.
    const perTask = drawn[0]!.height / drawn[0]!.count;
    for (const bar of drawn) expect(Math.abs(bar.height - bar.count * perTask)).toBeLessThan(1.01);
    // Idle days have a column (hover shows "no tasks") but no bar.
    const idle = bars.locator(`g.day[data-date="${isoDay(5)}"]`);
    expect(await idle.locator('rect.bar').count()).toBe(0);
    expect(await idle.locator('title').textContent()).toMatch(/no tasks$/);

    // Accessible: each chart is an image named by its title and described by its summary.
    for (const chart of ['svg.chart-tasks', 'svg.chart-credits', 'svg.chart-failures']) {
      const svg = usage.locator(chart);
      expect(await svg.getAttribute('role')).toBe('img');
      const [titleId, descId] = (await svg.getAttribute('aria-labelledby'))!.split(' ');
      expect(await svg.locator(`title#${titleId}`).textContent()).toBeTruthy();
      expect(await svg.locator(`desc#${descId}`).textContent()).toBeTruthy();
    }
    const total = expected.reduce((n, b) => n + b.count, 0);
    expect(await usage.locator('svg.chart-tasks desc').textContent()).toContain(`${total.toLocaleString('en-US')} tasks in 30 days`);

    // The line charts: one point per day with credits, and a failure-rate point per day with finished tasks.
    const activeDays = expected.map((b) => b.date).filter((d, i, all) => all.indexOf(d) === i);
    expect(await usage.locator('svg.chart-credits circle.point').count()).toBe(30);
    expect(await usage.locator('svg.chart-failures circle.point').count()).toBe(activeDays.length);

    // Headline figures and the table agree with the API.
    const report = (await api.req('GET', '/api/console/usage', { headers: account.auth })).body;
    expect(report.totals.created).toBe(total);
    expect(await usage.locator('.stats').innerText()).toMatch(new RegExp(`Credits spent\\s+${report.totals.credits_spent.toLocaleString('en-US')}\\b`));
    await usage.getByText('Show the figures as a table').click();
    const tableRows = usage.locator('.usage-table tbody tr');
    expect(await tableRows.count()).toBe(activeDays.length);
    expect(await tableRows.first().locator('td').first().getAttribute('data-label')).toBe('Day (UTC)');
    await usage.getByText('Show the figures as a table').click();
    await shot('dashboard-usage');

    // A shorter period redraws with fewer days.
    await page.getByLabel('Period').selectOption('7');
    await waitFor(async () => (await bars.locator('g.day').count()) === 7);

    // At phone width the charts fit the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    await waitFor(async () => Number(await usage.locator('svg.chart-tasks').getAttribute('width')) <= 360);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.getByLabel('Period').selectOption('30');
  });

  it('task page, image generation: a thumbnail that opens the full image, and the result in words', async () => {
    const publicId = await createTask('image-generation', { prompt: 'a calm evening sky with a low sun', width: 256, height: 192 });
    await finish(publicId, { status: TaskStatus.completed, result: { width: 256, height: 192 } }, { 'image.png': { type: 'image/png', data: picture() } });
    await page.goto(`${api.url}/app/tasks/${publicId}`);
    await waitForText(page.locator('#task-output'), '256 × 192 px');
    const thumb = page.getByRole('img', { name: 'Output image image.png' });
    await waitFor(() => thumb.evaluate((e: any) => e.complete && e.naturalWidth === 256));
    const link = page.locator('#task-files a.thumb');
    expect(await link.getAttribute('href')).toBe(`${api.url}/api/console/tasks/${publicId}/files/image.png`);
    expect(await link.getAttribute('target')).toBe('_blank');
    await shot('task-image');
    // The click opens the image itself, full size.
    const [opened] = await Promise.all([page.context().waitForEvent('page'), link.click()]);
    await opened.waitForLoadState();
    expect(opened.url()).toBe(`${api.url}/api/console/tasks/${publicId}/files/image.png`);
    await opened.close();
  });

  it('task page, video generation: a player with the video, which plays', async () => {
    const publicId = await createTask('video-generation', { prompt: 'a test pattern, gently moving', duration_seconds: 2 });
    await finish(publicId, { status: TaskStatus.completed, result: { width: 320, height: 180, duration_seconds: 2, frames: 16, fps: 8, format: 'mp4' } }, { 'video.mp4': { type: 'video/mp4', data: video() } });
    await page.goto(`${api.url}/app/tasks/${publicId}`);
    await waitForText(page.locator('#task-output'), '16 at 8 fps');
    const player = page.locator('#task-files video');
    expect(await player.getAttribute('src')).toBe(`${api.url}/api/console/tasks/${publicId}/files/video.mp4`);
    expect(await player.getAttribute('controls')).not.toBeNull();
    expect(await player.getAttribute('aria-label')).toBe('Output video video.mp4');
    await waitFor(() => player.evaluate((v: any) => v.readyState >= 2 || v.error !== null), { timeoutMs: 15_000 });
    expect(await player.evaluate((v: any) => ({ error: v.error?.message ?? null, width: v.videoWidth, height: v.videoHeight, duration: Math.round(v.duration) }))).toEqual({ error: null, width: 320, height: 180, duration: 2 });
    await player.evaluate((v: any) => {
      v.muted = true;
      return v.play();
    });
    await waitFor(() => player.evaluate((v: any) => v.currentTime > 0.2), { timeoutMs: 15_000 });
    await player.evaluate((v: any) => {
      v.pause();
      v.currentTime = 1;
    });
    await waitFor(() => player.evaluate((v: any) => !v.seeking && v.readyState >= 2));
    await shot('task-video');
  });

  it('task page, face detection: the uploaded image with a box per face, and every webhook attempt', async () => {
    const image = twoAstronauts();
    const publicId = await uploadFaceTask(image);
    const deliveryId = await finish(publicId, { status: TaskStatus.completed, result: { face_coordinates: TWO_FACES } });
    // Three attempts as the dispatcher records them: a timeout, a 500, then success; the task and
    // its delivery moved back in time with them, so every time shown follows the one before.
    const t0 = Date.now() - 120_000;
    await api.deps.db.pool.query('UPDATE tasks SET created_at = $2, started_at = $3, finished_at = $4 WHERE public_id = $1', [
      publicId,
      new Date(t0 - 8_000),
      new Date(t0 - 6_000),
      new Date(t0 - 1_000),
    ]);
    await api.deps.db.pool.query('UPDATE webhook_deliveries SET created_at = $2 WHERE id = $1', [deliveryId, new Date(t0 - 1_000)]);
    await api.deps.db.pool.query(
      `INSERT INTO webhook_attempts (delivery_id, attempt_number, started_at, duration_ms, status_code, error, response_excerpt, trace_id)
       VALUES ($1, 1, $2, 10004, NULL, 'timed out', NULL, NULL), ($1, 2, $3, 143, 500, 'HTTP 500', 'upstream unavailable', NULL),
              ($1, 3, $4, 87, 200, NULL, '{"ok":true}', '4bf92f3577b34da6a3ce929d0e0e4736')`,
      [deliveryId, new Date(t0), new Date(t0 + 30_000), new Date(t0 + 90_000)],
    );
    await api.deps.db.pool.query("UPDATE webhook_deliveries SET state = 'succeeded', attempt_count = 3, next_attempt_at = NULL, completed_at = $2 WHERE id = $1", [deliveryId, new Date(t0 + 90_087)]);

    await page.goto(`${api.url}/app/tasks/${publicId}`);
    const stage = page.locator('#task-output .face-stage');
    await stage.locator('svg.face-boxes').waitFor();
    const img = stage.getByRole('img', { name: 'Input image with 2 faces outlined' });
    expect(await img.getAttribute('src')).toBe(`/api/console/tasks/${publicId}/input`);
    expect(await img.evaluate((e: any) => [e.naturalWidth, e.naturalHeight])).toEqual([1024, 512]);
    // One box per face, in the image's pixel coordinates, landing on the face as displayed.
    const boxes = stage.locator('rect.face-box');
    expect(await boxes.count()).toBe(TWO_FACES.length);
    const imgBox = (await img.boundingBox())!;
    const scale = imgBox.width / 1024;
    for (const [i, face] of TWO_FACES.entries()) {
      const box = boxes.nth(i);
      expect(await box.evaluate((r: any) => ['x', 'y', 'width', 'height'].map((a) => Number(r.getAttribute(a))))).toEqual([face.x, face.y, face.width, face.height]);
      const shown = (await box.boundingBox())!;
      // Within a pixel and a half (the stroke straddles the edge).
      expect(Math.abs(shown.x - (imgBox.x + face.x * scale))).toBeLessThan(2.5);
      expect(Math.abs(shown.y - (imgBox.y + face.y * scale))).toBeLessThan(2.5);
      expect(Math.abs(shown.width - face.width * scale)).toBeLessThan(4);
    }
    const faceRows = page.locator('#task-output table.faces-table tbody tr');
    expect(await faceRows.count()).toBe(2);
    expect(await faceRows.first().innerText()).toMatch(/^1\s+0\.992\s+751\s+56\s+89\s+120$/);

    // The delivery with each attempt: time, response, latency, error, the start of the answer.
    const delivery = page.locator(`#task-deliveries article[data-delivery="${deliveryId}"]`);
    await waitForText(delivery, 'succeeded');
    const attempts = delivery.locator('tbody tr');
    expect(await attempts.count()).toBe(3);
    const cells = async (row: number) => (await attempts.nth(row).locator('td').allInnerTexts()).map((t) => t.trim());
    expect(await cells(0)).toEqual(['1', expect.any(String), 'no response', '10004 ms', 'timed out', '—', '—']);
    expect(await cells(1)).toEqual(['2', expect.any(String), 'HTTP 500', '143 ms', 'HTTP 500', 'upstream unavailable', '—']);
    expect(await cells(2)).toEqual(['3', expect.any(String), 'HTTP 200', '87 ms', '—', '{"ok":true}', '4bf92f3577b34da6a3ce929d0e0e4736']);
    expect(await attempts.nth(0).locator('time').getAttribute('datetime')).toBe(new Date(t0).toISOString());
    expect(await delivery.getByRole('button', { name: `Resend delivery ${deliveryId}` }).count()).toBe(1);
    await shot('task-faces');

    // The input route serves only the owner's uploaded image.
    const other = await seedAccount(api, { label: 'console-insights-other' });
    expect((await api.req('GET', `/api/console/tasks/${publicId}/input`, { headers: other.auth })).status).toBe(404);
    const own = await fetch(`${api.url}/api/console/tasks/${publicId}/input`, { headers: account.auth });
    expect({ status: own.status, type: own.headers.get('content-type'), bytes: Buffer.from(await own.arrayBuffer()).equals(image) }).toEqual({ status: 200, type: 'image/png', bytes: true });
  });

  it('task page, face detection from an image_url: boxes on a blank frame (nothing loaded from other sites)', async () => {
    const publicId = await createTask('face-detection', { image_url: 'https://images.example.test/team.jpg' });
    await finish(publicId, { status: TaskStatus.completed, result: { face_coordinates: [TWO_FACES[1]] } });
    await page.goto(`${api.url}/app/tasks/${publicId}`);
    const stage = page.locator('#task-output .face-stage.blank');
    await stage.waitFor();
    expect(await stage.locator('rect.face-box').count()).toBe(1);
    expect(await page.locator('#task-output img').count()).toBe(0);
    await waitForText(page.locator('#task-output figcaption'), 'https://images.example.test/team.jpg');
    // A task without an uploaded image has no input to serve.
    const res = await api.req('GET', `/api/console/tasks/${publicId}/input`, { headers: account.auth });
    expect({ status: res.status, body: res.body }).toEqual({ status: 404, body: { message: 'File not found.' } });
  });

  it('task page, failed: why it failed, in words, and that it was refunded', async () => {
    const publicId = await createTask('image-generation', { prompt: 'a storm', width: 64, height: 64 });
    await finish(publicId, { status: TaskStatus.failed, errorCode: 'engine_error', errorMessage: 'The image engine refused the prompt. Rephrase it and try again.' });
    await page.goto(`${api.url}/app/tasks/${publicId}`);
    const failure = page.locator('#task-output .failure');
    await waitForText(failure, 'The image engine refused the prompt. Rephrase it and try again.');
    expect(await failure.locator('code').innerText()).toBe('engine_error');
    await waitForText(page.locator('#task-summary'), 'refunded');
    await shot('task-failed');
    expect(browserProblems).toEqual([]);
  });
});
