// The example page of docs/examples/browser-progress in a real headless Chromium, served by its own
// server (the integrator's, a child process) on another origin than the API: the page asks its
// server to create a task, gets a read token, follows the task from the API with the SDK's browser
// module, and shows the progress bar moving and then the image. A Cog model server reports progress
// as a GPU model does; a worker runs it. The same page on an origin CORS_ALLOWED_ORIGINS does not
// list cannot read the task, and says so.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { chromium, type Browser, type Page } from 'playwright-core';
import { createModel, freePort, startCogServer, startPrivateRedis, waitFor, type CogModel, type CogServer, type PrivateRedis } from '@taskapi/testing';
import { createKey, seedAccount, type CreatedKey } from '../../services/api/test/support/harness';
import { startSystem, startWorker, superviseChild, type ChildService, type Running, type TestSystem } from './support/system';

const ROOT = path.resolve(__dirname, '../..');
const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

// Browser globals used inside page.evaluate() callbacks: the test program compiles without the DOM lib.
declare const document: any, MutationObserver: any;

jest.setTimeout(120_000);

/** The image model, reporting its progress in steps before it draws (as a diffusion model's steps). */
function steppedImageModel(): CogModel {
  const image = createModel('image');
  return {
    ...image,
    name: 'image-in-steps',
    // Streams its events (SSE), as a model decorated with @cog.streaming: the worker hears each step at once.
    streaming: true,
    async run(input, ctx) {
      // Slower than the stream's twice-a-second progress events, so each step can be seen.
      for (const fraction of [0.15, 0.3, 0.45, 0.6, 0.75, 0.9]) {
        await sleep(600, undefined, { signal: ctx.signal });
        ctx.metric('progress', fraction, 'replace');
      }
      return image.run(input, ctx);
    },
  };
}

describe('a web page follows a task with a read token', () => {
  let redis: PrivateRedis;
  let system: TestSystem;
  let cog: CogServer;
  let worker: Running;
  let key: CreatedKey;
  let listed: ChildService;
  let unlisted: ChildService;
  let listedUrl: string;
  let unlistedUrl: string;
  let browser: Browser;

  /** The integrator's server of the example, as its README runs it. */
  async function pageServer(port: number): Promise<ChildService> {
    const child = spawn(process.execPath, [path.join(ROOT, 'docs/examples/browser-progress/server.mjs')], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', PORT: String(port), HOST: '127.0.0.1', TASKAPI_API_KEY: key.plaintext, TASKAPI_BASE_URL: system.api.url },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // Its one line is not JSON: the supervisor keeps it as `raw`.
    const service = await superviseChild('example page server', child, []);
    await waitFor(() => service.logs.some((l) => String(l.raw ?? '').startsWith('example page on')), { what: 'the example page server' });
    return service;
  }

  beforeAll(async () => {
    // The SDK's browser module the page server serves is the package's build.
    await new Promise<void>((resolve, reject) => {
      const build = spawn(process.execPath, [path.join(ROOT, 'packages/client/scripts/build.mjs')], { stdio: 'inherit' });
      build.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`client build exited ${code}`))));
    });
    const [listedPort, unlistedPort] = [await freePort(), await freePort()];
    listedUrl = `http://127.0.0.1:${listedPort}`;
    unlistedUrl = `http://127.0.0.1:${unlistedPort}`;
    [redis, cog] = await Promise.all([startPrivateRedis(), startCogServer({ model: steppedImageModel() })]);
    system = await startSystem(0, { REDIS_URL: redis.url, CORS_ALLOWED_ORIGINS: listedUrl, RATE_LIMIT_PAID_PER_MINUTE: '100000' });
    worker = await startWorker({ ...system.env, WORKER_KINDS: 'image-generation', ENGINE_IMAGE: 'cog', COG_URL_IMAGE: cog.url, COG_WEBHOOK_BASE_URL: system.api.url });
    key = await createKey(system.api, await seedAccount(system.api, { credits: 100 }), { type: 'paid' });
    [listed, unlisted] = await Promise.all([pageServer(listedPort), pageServer(unlistedPort)]);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });

  afterAll(async () => {
    await browser?.close();
    await Promise.all([listed?.stop(), unlisted?.stop(), worker?.stop()]);
    await cog?.close();
    await system?.stop();
    await redis?.stop();
  });

  async function open(url: string): Promise<{ page: Page; requested: string[]; problems: string[] }> {
    const page = await browser.newPage();
    page.setDefaultTimeout(20_000);
    const requested: string[] = [];
    const problems: string[] = [];
    page.on('request', (r) => requested.push(r.url()));
    page.on('console', (m) => void (m.type() === 'error' && problems.push(m.text())));
    page.on('pageerror', (e) => problems.push(e.message));
    await page.goto(url);
    return { page, requested, problems };
  }

  it('shows the progress bar moving, then the image; the key never reaches the browser', async () => {
    const { page, requested, problems } = await open(listedUrl);
    await page.getByLabel('Prompt').fill('a lighthouse in steps');
    await page.getByRole('button', { name: 'Generate' }).click();
    // The bar takes values strictly between 0 and 1 on its way (the model's steps), then 1: watched
    // from the page itself, on every change, until the image is shown.
    const seen = await page.evaluate(
      () =>
        new Promise<number[]>((resolve) => {
          const bar = document.getElementById('bar');
          const values: number[] = [bar.value];
          new MutationObserver(() => values.push(bar.value)).observe(bar, { attributes: true, childList: true, characterData: true, subtree: true });
          const img = document.getElementById('result');
          new MutationObserver(() => {
            if (!img.hidden) resolve(values);
          }).observe(img, { attributes: true });
        }),
    );
    expect({ seen, between: seen.filter((v) => v > 0 && v < 1).length >= 3 }).toEqual({ seen, between: true });
    await page.locator('#result').waitFor({ state: 'visible' });
    await page.waitForFunction(() => {
      const img = document.getElementById('result');
      return img.complete && img.naturalWidth === 256;
    });
    expect(await page.locator('#bar').evaluate((el: any) => el.value as number)).toBe(1);
    expect(await page.locator('#status').textContent()).toBe('Done.');
    expect(await page.locator('#error').isHidden()).toBe(true);
    // The task was read from the API's own origin, with the token (never the key).
    const api = new URL(system.api.url).origin;
    expect(requested.some((u) => u.startsWith(`${api}/api/public/tasks/`) && u.endsWith('/events'))).toBe(true);
    expect(requested.some((u) => u.includes(key.plaintext))).toBe(false);
    expect(await page.content()).not.toContain(key.plaintext);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('on an origin CORS_ALLOWED_ORIGINS does not list, the page cannot read the task and says so', async () => {
    const { page, problems } = await open(unlistedUrl);
    await page.getByRole('button', { name: 'Generate' }).click();
    const error = page.getByRole('alert');
    await error.waitFor({ state: 'visible' });
    expect(await error.textContent()).toMatch(/^Could not follow the task: /);
    expect(await page.locator('#result').isHidden()).toBe(true);
    // Chromium names the reason: no Access-Control-Allow-Origin for this origin.
    expect(problems.some((p) => /CORS policy/.test(p) && p.includes(unlistedUrl))).toBe(true);
    await page.close();
  });
});
