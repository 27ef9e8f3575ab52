// The /docs quickstart, run as a reader would run it: each script exactly as the page shows it,
// as a child process with only the documented environment, against the API started from dist/
// (which must carry the scripts), a worker, the dispatcher and a real HTTPS webhook receiver.
// Then each script's `verify` step checks the notification that receiver got, and refuses it
// tampered with or stale.
import { spawn } from 'node:child_process';
import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { freePort, installClientPackage, startHttpsReceiver, waitFor, type HttpsReceiver, type ReceivedRequest } from '@taskapi/testing';
import { createKey, seedAccount, withKey, type CreatedKey, type TestAccount } from '../../services/api/test/support/harness';
import { startChild, startDispatcher, startSystem, startWorker, type ChildService, type Running, type TestSystem } from './support/system';

const REDIS_DB = 2;
const QUICKSTART = path.resolve(__dirname, '../../docs/quickstart');
const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end, feeding `stdin`. */
function run(command: string, args: string[], opts: { env: NodeJS.ProcessEnv; cwd?: string; stdin?: Buffer }): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env: opts.env, cwd: opts.cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(opts.stdin);
  });
}

const unescapeHtml = (html: string) => html.replaceAll('&lt;', '<').replaceAll('&gt;', '>').replaceAll('&quot;', '"').replaceAll('&amp;', '&');

describe('the /docs quickstart', () => {
  let system: TestSystem;
  let worker: Running;
  let dispatcher: Running;
  let api: ChildService;
  let receiver: HttpsReceiver;
  let account: TestAccount;
  let key: CreatedKey;
  let secret: string;
  let base: string;
  let outDir: string;

  beforeAll(async () => {
    system = await startSystem(REDIS_DB, { WORKER_KINDS: 'image-generation' });
    receiver = await startHttpsReceiver(() => 204);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    [worker, dispatcher, api] = await Promise.all([
      startWorker(system.env),
      startDispatcher(system.env),
      // The image's command: the built API, so /docs must find the scripts inside dist/.
      startChild('api', { ...system.env, HOST: '127.0.0.1', PORT: String(port), PUBLIC_BASE_URL: base }, 'api listening', 'node'),
    ]);
    account = await seedAccount(system.api, { credits: 100, label: 'quickstart' });
    key = await createKey(system.api, account, { type: 'paid' });
    secret = (await system.api.req('GET', '/api/webhook-secret', { headers: account.auth })).body.webhook_secret;
    outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'taskapi-quickstart-'));
  }, 90_000);

  afterAll(async () => {
    await api?.stop();
    await Promise.all([worker?.stop(), dispatcher?.stop()]);
    await receiver?.close();
    await system?.stop();
    if (outDir) fs.rmSync(outDir, { recursive: true, force: true });
  });

  /** Only what the quickstart documents, plus what finding the interpreters needs. */
  const scriptEnv = (vars: Record<string, string>): NodeJS.ProcessEnv => ({ PATH: process.env.PATH, HOME: process.env.HOME, ...vars });

  it('/docs opens with the quickstart, each script byte for byte as the files, under a CSP without inline scripts', async () => {
    const res = await fetch(`${base}/docs`);
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toMatch(/script-src 'self';/);
    const html = await res.text();
    expect(html.indexOf('<h1>Task API quickstart</h1>')).toBeGreaterThan(0);
    expect(html.indexOf('<h1>Task API quickstart</h1>')).toBeLessThan(html.indexOf('id="swagger-ui"'));
    expect(html).toContain(`export TASKAPI_BASE_URL=${base}`);
    // The OpenAPI document's `info.license.url` points here.
    expect(html).toContain('<h2 id="license">');
    expect(html).toMatch(/sample code under the\s+MIT License/);
    // Swagger UI's default validator badge is an image from another origin, which img-src refuses.
    expect(await (await fetch(`${base}/docs/init.js`)).text()).toContain('validatorUrl: null');
    const document = (await (await fetch(`${base}/api/openapi.json`)).json()) as { info: { license: { url: string } } };
    expect(document.info.license.url).toBe(`${base}/docs#license`);
    // Every script is a same-origin file; none is inline.
    for (const tag of html.match(/<script\b[^>]*>/g) ?? []) expect(tag).toMatch(/^<script src="\/docs\//);
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);

    for (const file of ['quickstart.sh', 'quickstart.py', 'quickstart.mjs']) {
      const onDisk = fs.readFileSync(path.join(QUICKSTART, file), 'utf8');
      const shown = new RegExp(`<code data-file="${file.replace('.', '\\.')}">([\\s\\S]*?)</code>`).exec(html)?.[1];
      expect({ file, identical: shown !== undefined && unescapeHtml(shown) === onDisk }).toEqual({ file, identical: true });
      const download = await fetch(`${base}/docs/quickstart/${file}`);
      expect(download.status).toBe(200);
      expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(onDisk))).toBe(true);
    }
    expect((await fetch(`${base}/docs/quickstart/other.sh`)).status).toBe(404);
  });

  /** Runs a script's main flow and checks what it printed, downloaded and left on the server. */
  async function createWaitDownload(command: string, args: string[], hookPath: string, cwd?: string): Promise<ReceivedRequest> {
    const dir = fs.mkdtempSync(path.join(outDir, 'run-'));
    const env = scriptEnv({ TASKAPI_BASE_URL: base, TASKAPI_API_KEY: key.plaintext, TASKAPI_CALLBACK_URL: receiver.url(hookPath), TASKAPI_OUTPUT_DIR: dir });
    const result = await run(command, args, { env, cwd });
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: '' });
    const id = /^created (task_[A-Za-z0-9]+)$/m.exec(result.stdout)?.[1];
    expect(id).toBeDefined();
    const saved = path.join(dir, 'image.png');
    const size = fs.statSync(saved).size;
    expect(result.stdout).toBe(`created ${id}\nfinished ${id} with status 20\nsaved ${saved} (${size} bytes)\n`);

    // The right bytes: the task's own PNG, as the API serves it to the key's owner.
    const bytes = fs.readFileSync(saved);
    expect(bytes.subarray(0, 8).equals(PNG_SIGNATURE)).toBe(true);
    const served = await fetch(`${base}/api/tasks/${id}/files/image.png`, { headers: withKey(key) });
    expect(served.status).toBe(200);
    expect(Buffer.from(await served.arrayBuffer()).equals(bytes)).toBe(true);
    const task = (await system.api.req('GET', `/api/tasks/${id}`, { headers: withKey(key) })).body;
    expect(task).toMatchObject({ kind: 'image-generation', status: 20, payload: { order_id: 'A-1001' }, callback_url: receiver.url(hookPath) });
    expect(task.input).toEqual({ prompt: 'a lighthouse at dawn', width: 256, height: 256 });
    // Created with an Idempotency-Key (the SDK's own, or the script's), so a retry could not charge twice.
    const keys = await system.api.deps.db.pool.query(
      'SELECT k.key FROM idempotency_keys k JOIN tasks t ON t.id = k.task_id WHERE t.public_id = $1',
      [id],
    );
    expect(keys.rows).toHaveLength(1);

    const hook = await waitFor(() => receiver.at(hookPath)[0], { timeoutMs: 30_000, what: `the webhook at ${hookPath}` });
    expect(JSON.parse(hook.body.toString())).toEqual({ public_id: id, status: 20, error_code: null, payload: { order_id: 'A-1001' } });
    return hook;
  }

  /**
   * The script's `verify` step on a real notification: accepted as received, refused altered or old.
   * The shell and Python scripts take X-Signature and X-Timestamp; the Node.js one X-Signature and
   * the Standard Webhooks headers (whose signed timestamp is the one that counts).
   */
  async function verifies(command: string, args: string[], hook: ReceivedRequest, cwd?: string, standard = false): Promise<void> {
    const env = scriptEnv({ TASKAPI_WEBHOOK_SECRET: secret });
    const header = (name: string) => hook.headers[name] as string;
    const signature = header('x-signature');
    const timestamp = standard ? header('webhook-timestamp') : header('x-timestamp');
    const headerArgs = (ts: string) => (standard ? [signature, header('webhook-id'), ts, header('webhook-signature')] : [signature, ts]);
    const verify = (body: Buffer, ts = timestamp) => run(command, [...args, 'verify', ...headerArgs(ts)], { env, cwd, stdin: body });

    expect(await verify(hook.body)).toEqual({ code: 0, stdout: 'webhook verified\n', stderr: '' });
    const tampered = Buffer.from(hook.body.toString().replace('A-1001', 'A-1002'));
    const refused = await verify(tampered);
    expect({ code: refused.code, stdout: refused.stdout }).toEqual({ code: 1, stdout: '' });
    expect(refused.stderr).toMatch(/^webhook rejected: /);
    const trailingNewline = await verify(Buffer.concat([hook.body, Buffer.from('\n')]));
    expect(trailingNewline.code).toBe(1);
    const stale = await verify(hook.body, String(Number(timestamp) - 3600));
    expect({ code: stale.code, stderr: stale.stderr }).toEqual({ code: 1, stderr: expect.stringMatching(/^webhook rejected: /) });
  }

  it.each([
    ['curl', 'bash', 'quickstart.sh'],
    ['Python', 'python3', 'quickstart.py'],
  ])('%s: creates, waits, downloads the PNG; verifies the webhook and refuses it altered', async (_label, command, file) => {
    // -B: no __pycache__ left beside the script (bash ignores it as an argument of its own).
    const args = command === 'python3' ? ['-B', path.join(QUICKSTART, file)] : [path.join(QUICKSTART, file)];
    const hook = await createWaitDownload(command, args, `/hooks/${file}`);
    await verifies(command, args, hook);
  }, 120_000);

  it.each([
    ['curl', 'bash', 'quickstart.sh'],
    ['Python', 'python3', 'quickstart.py'],
  ])('%s: a hostile X-Timestamp runs nothing and is refused', async (_label, command, file) => {
    const args = command === 'python3' ? ['-B', path.join(QUICKSTART, file)] : [path.join(QUICKSTART, file)];
    const marker = path.join(outDir, `pwned-${file}`);
    const body = Buffer.from('{"public_id":"task_x","status":20,"error_code":null,"payload":null}');
    // A valid signature, so the timestamp is what is judged. In $(( )) bash evaluates a subscript as
    // code: PATH[$(cmd)] runs cmd even under `set -u` (PATH is set), x[$(cmd)] without it.
    const signature = createHmac('sha256', secret).update(body).digest('hex');
    for (const hostile of [`PATH[$(touch ${marker})]`, `x[$(touch ${marker})]`, `$(touch ${marker})`, '1+1', '-5']) {
      const result = await run(command, [...args, 'verify', signature, hostile], { env: scriptEnv({ TASKAPI_WEBHOOK_SECRET: secret }), stdin: body });
      expect({ hostile, code: result.code, stdout: result.stdout, stderr: result.stderr }).toEqual({ hostile, code: 1, stdout: '', stderr: expect.stringMatching(/^webhook rejected: malformed timestamp/) });
    }
    expect(fs.existsSync(marker)).toBe(false);
  }, 60_000);

  it.each([
    ['curl', 'bash', 'quickstart.sh'],
    ['Python', 'python3', 'quickstart.py'],
  ])('%s: pauses between polls the server did not hold; prints an error answer before stopping', async (_label, command, file) => {
    const args = command === 'python3' ? ['-B', path.join(QUICKSTART, file)] : [path.join(QUICKSTART, file)];
    // A server that never holds a poll (no Preference-Applied), as while shutting down, then fails the task.
    const gets: number[] = [];
    let refuse = false;
    const fake = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => {
        const task = (status: number) => JSON.stringify({ public_id: 'task_fake', status, error_code: status === 30 ? 'engine_error' : null, error_message: status === 30 ? 'The engine failed.' : null });
        res.setHeader('content-type', 'application/json');
        if (req.method === 'POST' && refuse) return void res.writeHead(402).end('{"message":"Insufficient credits.","required":2,"available":0}');
        if (req.method === 'POST') return void res.writeHead(201).end(task(0));
        gets.push(Date.now());
        res.writeHead(200).end(task(gets.length < 3 ? 10 : 30));
      });
    });
    await new Promise<void>((resolve) => fake.listen(0, '127.0.0.1', resolve));
    try {
      const env = scriptEnv({ TASKAPI_BASE_URL: `http://127.0.0.1:${(fake.address() as AddressInfo).port}`, TASKAPI_API_KEY: 'sk-test-fake' });
      const failed = await run(command, args, { env });
      expect({ code: failed.code, stderr: failed.stderr }).toEqual({ code: 1, stderr: 'failed: engine_error: The engine failed.\n' });
      expect(gets).toHaveLength(3);
      for (let i = 1; i < gets.length; i++) expect(gets[i]! - gets[i - 1]!).toBeGreaterThanOrEqual(1900);

      refuse = true;
      const refused = await run(command, args, { env });
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain('Insufficient credits.');
    } finally {
      fake.closeAllConnections();
      await new Promise<void>((resolve) => fake.close(() => resolve()));
    }
  }, 60_000);

  it('Node.js: the same with @taskapi/client installed from its packed tarball, the script copied into the project', async () => {
    const app = await installClientPackage(path.join(outDir, 'node'));
    // Where a reader puts it: beside their node_modules (ES modules resolve packages from the file's folder).
    fs.copyFileSync(path.join(QUICKSTART, 'quickstart.mjs'), path.join(app, 'quickstart.mjs'));
    const hook = await createWaitDownload(process.execPath, ['quickstart.mjs'], '/hooks/quickstart.mjs', app);
    await verifies(process.execPath, ['quickstart.mjs'], hook, app, true);
  }, 240_000);
});
