// @taskapi/client as an integrator gets it: built and packed with `npm pack`, installed from the
// tarball into an empty folder, and used from plain JavaScript (an ES module and a CommonJS file)
// run by `node` with only its own environment, against the real API, worker and dispatcher. The
// webhook a real HTTPS receiver got is handed back to the script and verified with the SDK.
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { installClientPackage, startHttpsReceiver, waitFor, type HttpsReceiver, type ReceivedRequest } from '@taskapi/testing';
import { createKey, seedAccount, withKey, type CreatedKey, type TestAccount } from '../../services/api/test/support/harness';
import { startDispatcher, startSystem, startWorker, type Running, type TestSystem } from './support/system';

const REDIS_DB = 14;
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
const run = promisify(execFile);
const CLIENT_VERSION = (JSON.parse(fs.readFileSync(path.resolve(__dirname, '../../packages/client/package.json'), 'utf8')) as { version: string }).version;

/** One script, in both module systems: `run` uses the API, `verify <body> <headers>` checks a webhook. */
const SCRIPT_BODY = `
async function main() {
  const [phase, ...args] = process.argv.slice(2);
  if (phase === 'run') {
    // baseUrl from TASKAPI_BASE_URL, as documented.
    const api = new TaskApi({ apiKey: process.env.TASKAPI_API_KEY });
    const task = await api.tasks.create('image-generation', {
      prompt: 'sdk end to end', width: 64, height: 64, callback_url: process.env.CALLBACK_URL, payload: { via: process.env.VIA, n: 1.0 },
    });
    const done = await api.tasks.wait(task.public_id, { timeoutMs: 60000 });
    const bytes = await api.files.download(done.files[0]);
    const listed = [];
    for await (const t of api.tasks.list({ kind: 'image-generation', status: [20, 30], limit: 1 })) listed.push(t.public_id);
    let error;
    try {
      await api.tasks.create('image-generation', { prompt: 'too wide', width: 5000 });
    } catch (err) {
      error = { isTaskApiError: err instanceof TaskApiError, name: err.name, status: err.status, message: err.message, body: err.body, requestId: err.requestId };
    }
    return { version: VERSION, created: task, done, bytes: Buffer.from(bytes).toString('base64'), listed, error };
  }
  if (phase === 'verify') {
    const raw = fs.readFileSync(args[0]);
    const headers = JSON.parse(fs.readFileSync(args[1], 'utf8'));
    const event = await verifyWebhook(raw, headers, process.env.WEBHOOK_SECRET);
    let tampered;
    try {
      await verifyWebhook(Buffer.concat([raw, Buffer.from(' ')]), headers, process.env.WEBHOOK_SECRET);
      tampered = 'accepted';
    } catch (err) {
      tampered = err instanceof WebhookVerificationError ? err.message : 'unexpected ' + err;
    }
    return { event, tampered };
  }
  throw new Error('unknown phase ' + phase);
}
main().then((out) => process.stdout.write(JSON.stringify(out)), (err) => { console.error(err); process.exit(1); });
`;

const NAMES = 'TaskApi, TaskApiError, verifyWebhook, WebhookVerificationError, VERSION';
const SCRIPTS = {
  esm: { file: 'sdk-check.mjs', text: `import fs from 'node:fs';\nimport { ${NAMES} } from '@taskapi/client';\n${SCRIPT_BODY}` },
  cjs: { file: 'sdk-check.cjs', text: `const fs = require('node:fs');\nconst { ${NAMES} } = require('@taskapi/client');\n${SCRIPT_BODY}` },
} as const;

describe('@taskapi/client, packed and installed, from plain JavaScript', () => {
  let system: TestSystem;
  let worker: Running;
  let dispatcher: Running;
  let receiver: HttpsReceiver;
  let account: TestAccount;
  let key: CreatedKey;
  let secret: string;
  let tmp: string;
  let app: string;

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'taskapi-sdk-'));
    const installing = installClientPackage(tmp);
    system = await startSystem(REDIS_DB, { WORKER_KINDS: 'image-generation' });
    receiver = await startHttpsReceiver(() => 204);
    [worker, dispatcher] = await Promise.all([startWorker(system.env), startDispatcher(system.env)]);
    account = await seedAccount(system.api, { credits: 100 });
    key = await createKey(system.api, account, { type: 'paid' });
    secret = (await system.api.req('GET', '/api/webhook-secret', { headers: account.auth })).body.webhook_secret;
    app = await installing;
    for (const { file, text } of Object.values(SCRIPTS)) fs.writeFileSync(path.join(app, file), text);
  }, 180_000);

  afterAll(async () => {
    await Promise.all([worker?.stop(), dispatcher?.stop()]);
    await receiver?.close();
    await system?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  /** Runs a script with only the environment an integrator would set. */
  async function script(file: string, args: string[], env: Record<string, string>): Promise<any> {
    const { stdout } = await run(process.execPath, [file, ...args], { cwd: app, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 90_000 });
    return JSON.parse(stdout);
  }

  it('installs as a package with no dependencies, ESM, CommonJS and type declarations', () => {
    const installed = path.join(app, 'node_modules/@taskapi/client');
    const manifest = JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8'));
    expect(manifest.dependencies ?? {}).toEqual({});
    expect(manifest.license).toBe('MIT');
    const files = ['dist/index.mjs', 'dist/index.cjs', 'dist/index.d.mts', 'dist/index.d.cts', 'dist/generated.d.mts', 'dist/generated.d.cts', 'README.md', 'LICENSE'];
    for (const file of files) expect({ file, exists: fs.existsSync(path.join(installed, file)) }).toEqual({ file, exists: true });
    expect(fs.readdirSync(path.join(app, 'node_modules')).filter((name) => !name.startsWith('.'))).toEqual(['@taskapi']);
  });

  it('its declarations type create() per kind, for ES module and CommonJS consumers without Node types', async () => {
    const check = (from: string) => `${from}
const api = new TaskApi({ apiKey: 'sk-test-x', baseUrl: 'https://api.example.com' });
export async function use(): Promise<void> {
  const task = await api.tasks.create('image-generation', { prompt: 'p', width: 64, payload: { any: ['json'] } });
  const kind: 'image-generation' = task.kind;
  // @ts-expect-error duration_seconds belongs to video generation
  await api.tasks.create('image-generation', { prompt: 'p', duration_seconds: 3 });
  // @ts-expect-error prompt is required
  await api.tasks.create('video-generation', { duration_seconds: 3 });
  for await (const t of api.tasks.list({ kind: 'face-detection', status: [20, 30] })) {
    const faces: 'face-detection' = t.kind;
    void faces;
  }
  const bytes: Uint8Array = await api.files.download(task.files[0]!, { timeoutMs: 600_000 });
  const event: WebhookEvent = await verifyWebhook(bytes, new Headers(), 'whsec_x', { requireStandardWebhooks: true });
  const status: 20 | 30 = event.status;
  try {
    await api.tasks.wait(task.public_id, { timeoutMs: 1000, signal: AbortSignal.timeout(2000) });
  } catch (err) {
    if (err instanceof TaskApiError) console.log(err.status, err.message, err.body, err.requestId);
  }
  void kind;
  void status;
}
`;
    const names = 'TaskApi, TaskApiError, verifyWebhook, type WebhookEvent';
    fs.writeFileSync(path.join(app, 'check.mts'), check(`import { ${names} } from '@taskapi/client';`));
    fs.writeFileSync(path.join(app, 'check.cts'), check(`import { ${names} } from '@taskapi/client';`));
    // The browser entry, from a page's ES module: typed task states, a typed error.
    fs.writeFileSync(
      path.join(app, 'check-browser.mts'),
      `import { watchTask, TaskApiError, type Task } from '@taskapi/client/browser';
export async function follow(id: string, token: string): Promise<Task | undefined> {
  let last: Task | undefined;
  try {
    for await (const task of watchTask('https://api.example.com', id, token, { maxReconnects: 3 })) last = task;
  } catch (err) {
    if (err instanceof TaskApiError) console.log(err.status, err.message);
  }
  // @ts-expect-error the token is required
  watchTask('https://api.example.com', id);
  return last;
}
`,
    );
    const tsconfig = { compilerOptions: { strict: true, noEmit: true, module: 'node16', moduleResolution: 'node16', target: 'es2022', lib: ['es2022', 'dom'], types: [] }, files: ['check.mts', 'check.cts', 'check-browser.mts'] };
    fs.writeFileSync(path.join(app, 'tsconfig.json'), JSON.stringify(tsconfig));
    const tsc = require.resolve('typescript/bin/tsc');
    const result = await run(process.execPath, [tsc, '-p', app, '--explainFiles']).then(
      (r) => ({ code: 0, ...r }),
      (err: { code?: number; stdout?: string; stderr?: string }) => ({ code: err.code, stdout: err.stdout ?? '', stderr: err.stderr ?? '' }),
    );
    const errors = result.stdout.split('\n').filter((line) => /error TS\d+/.test(line));
    expect({ code: result.code, errors, stderr: result.stderr }).toEqual({ code: 0, errors: [], stderr: '' });
    // Each module system gets the declarations of its own format.
    expect(result.stdout).toMatch(/Imported via '@taskapi\/client' from file '[^']*check\.mts' with packageId '@taskapi\/client\/dist\/index\.d\.mts@/);
    expect(result.stdout).toMatch(/Imported via '@taskapi\/client' from file '[^']*check\.cts' with packageId '@taskapi\/client\/dist\/index\.d\.cts@/);
  }, 60_000);

  it('@taskapi/client/browser: an ES module without Node built-ins, typed; watchTask follows a task with a token createReadToken minted', async () => {
    const installed = path.join(app, 'node_modules/@taskapi/client');
    const bundle = fs.readFileSync(path.join(installed, 'dist/browser.mjs'), 'utf8');
    expect(bundle).not.toMatch(/from\s*["']node:|import\(\s*["']node:|\brequire\(/);
    expect(fs.existsSync(path.join(installed, 'dist/browser.d.mts'))).toBe(true);
    fs.writeFileSync(
      path.join(app, 'browser-check.mjs'),
      `import { TaskApi } from '@taskapi/client';
import { watchTask, readTask, TaskApiError } from '@taskapi/client/browser';
const base = process.env.TASKAPI_BASE_URL;
const api = new TaskApi({ apiKey: process.env.TASKAPI_API_KEY });
const task = await api.tasks.create('image-generation', { prompt: 'followed by a page', width: 64, height: 64 });
const { token, expires_at } = await api.tasks.createReadToken(task.public_id, { ttlSeconds: 120 });
const states = [];
for await (const t of watchTask(base, task.public_id, token)) states.push(t.status);
const once = await readTask(base, task.public_id, token);
let refused;
try { await readTask(base, task.public_id, token.slice(0, -3)); } catch (err) { refused = { isTaskApiError: err instanceof TaskApiError, status: err.status, message: err.message }; }
process.stdout.write(JSON.stringify({ token, expires_at, states, once: { status: once.status, files: once.files.length }, refused }));
`,
    );
    const out = await script('browser-check.mjs', [], { TASKAPI_BASE_URL: system.api.url, TASKAPI_API_KEY: key.plaintext });
    expect(out.token).toMatch(/^trt_/);
    expect(new Date(out.expires_at).getTime() - Date.now()).toBeLessThanOrEqual(120_000);
    expect(out.states.at(-1)).toBe(20);
    expect(out.once).toEqual({ status: 20, files: 1 });
    expect(out.refused).toEqual({ isTaskApiError: true, status: 401, message: 'Invalid read token.' });
  }, 60_000);

  for (const [via, { file }] of Object.entries(SCRIPTS)) {
    it(`${via}: create → wait → download → list → an API error, then verify the delivered webhook`, async () => {
      const env = { TASKAPI_BASE_URL: system.api.url, TASKAPI_API_KEY: key.plaintext, CALLBACK_URL: receiver.url(`/hooks/${via}`), VIA: via };
      const out = await script(file, ['run'], env);
      expect(out.version).toBe(CLIENT_VERSION);

      const publicId = out.created.public_id as string;
      expect(out.created).toMatchObject({ kind: 'image-generation', status: 0, payload: { via, n: 1 }, callback_url: env.CALLBACK_URL });
      expect(out.done).toMatchObject({ public_id: publicId, status: 20, error_code: null, error_message: null });
      const bytes = Buffer.from(out.bytes, 'base64');
      expect(bytes.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
      const direct = await fetch(`${system.api.url}/api/tasks/${publicId}/files/${out.done.files[0].name}`, { headers: withKey(key) });
      expect(bytes.equals(Buffer.from(await direct.arrayBuffer()))).toBe(true);
      expect(bytes.length).toBe(out.done.files[0].size);

      // Every page of one task each, followed to the end: the same as the API's own full list.
      const all = await system.api.req('GET', '/api/tasks?kind=image-generation&status=20,30&limit=100', { headers: withKey(key) });
      expect(out.listed).toEqual(all.body.data.map((t: { public_id: string }) => t.public_id));
      expect(out.listed).toContain(publicId);

      const refused = await system.api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'too wide', width: 5000 } });
      expect(out.error).toEqual({ isTaskApiError: true, name: 'TaskApiError', status: 400, message: refused.body.message, body: refused.body, requestId: expect.stringMatching(/^req_/) });

      const hook: ReceivedRequest = await waitFor(() => receiver.at(`/hooks/${via}`)[0], { timeoutMs: 30_000, what: `the webhook of ${publicId}` });
      const bodyFile = path.join(tmp, `${via}-body.bin`);
      const headersFile = path.join(tmp, `${via}-headers.json`);
      fs.writeFileSync(bodyFile, hook.body);
      fs.writeFileSync(headersFile, JSON.stringify(hook.headers));
      const verified = await script(file, ['verify', bodyFile, headersFile], { WEBHOOK_SECRET: secret });
      expect(verified.event).toEqual({ public_id: publicId, status: 20, error_code: null, payload: { via, n: 1 } });
      expect(verified.tampered).toBe('X-Signature does not match the body.');
    }, 120_000);
  }
});
