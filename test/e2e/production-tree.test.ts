// The image's runtime stage, proven without a Docker engine: the production tree (manifests,
// dist/, prisma/) is laid out by the same script the Dockerfile uses, installed into an empty
// folder with dev dependencies omitted, and the services run from there with plain `node`:
// migrations, the operator CLI, one task of every kind from creation to a verified webhook.
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { webhookSignature } from '@taskapi/crypto';
import {
  TEST_DATABASE_URL,
  freePort,
  recreateDatabase,
  startHttpsReceiver,
  testCa,
  testEnv,
  waitFor,
  type HttpsReceiver,
} from '@taskapi/testing';
import { flushRedis, redisUrl, superviseChild, type ChildService } from './support/system';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '../..');
// Database 0 of the run's Redis: 1–14 are the other end-to-end files' (6 is cog-engine's, which this file shared
// until jest happened to run the two at once: this one empties its database as it starts).
const REDIS_DB = 0;
// Beside the suite's database, named after it, so two runs with different TEST_DATABASE_URLs never share it.
const DATABASE_URL = (() => {
  const url = new URL(TEST_DATABASE_URL);
  url.pathname = `${url.pathname}_runtime`;
  return url.toString();
})();
const fixture = (name: string) => fs.readFileSync(path.join(__dirname, '../fixtures', name)).toString('base64');

describe('the production tree (what the image runs)', () => {
  let tree: string;
  let env: NodeJS.ProcessEnv;
  let receiver: HttpsReceiver;
  let base: string;
  const services: ChildService[] = [];

  beforeAll(async () => {
    tree = fs.mkdtempSync(path.join(os.tmpdir(), 'taskapi-runtime-'));
    await run(process.execPath, [path.join(ROOT, 'scripts/pack-runtime.mjs'), tree, '--install'], { cwd: ROOT });
    await recreateDatabase(DATABASE_URL, { migrate: false });
    await flushRedis(redisUrl(REDIS_DB));
    receiver = await startHttpsReceiver(() => 204);
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    env = {
      PATH: process.env.PATH,
      ...testEnv({
        NODE_ENV: 'production',
        DATABASE_URL,
        REDIS_URL: redisUrl(REDIS_DB),
        PORT: String(port),
        HOST: '127.0.0.1',
        PUBLIC_BASE_URL: base,
        ADMIN_USER: 'operator',
        ADMIN_PASSWORD: 'operator password',
        FILES_DIR: path.join(tree, 'files'),
        LOG_LEVEL: 'info',
        VIDEO_FORMAT: 'mp4',
      }),
      NODE_EXTRA_CA_CERTS: testCa().caFile,
    };
  }, 240_000);

  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    await receiver?.close();
    if (tree) fs.rmSync(tree, { recursive: true, force: true });
  });

  const node = (entry: string, ...args: string[]) => run(process.execPath, ['--enable-source-maps', `dist/${entry}.js`, ...args], { cwd: tree, env });

  it('holds production dependencies only, and no sources', () => {
    for (const dev of ['typescript', 'prisma', 'tsx', 'jest', 'ts-jest', 'esbuild', 'eslint', 'playwright-core', 'autocannon', '@types/jest']) {
      expect([dev, fs.existsSync(path.join(tree, 'node_modules', dev))]).toEqual([dev, false]);
    }
    expect(fs.existsSync(path.join(tree, 'services/api/src'))).toBe(false);
    expect(fs.readdirSync(path.join(tree, 'dist')).filter((f) => f.endsWith('.js')).sort()).toEqual(
      ['admin.js', 'api.js', 'migrate.js', 'seed-demo.js', 'webhook-dispatcher.js', 'worker.js'],
    );
  });

  it('migrates, runs the operator CLI and the three services with plain node, and delivers verified webhooks', async () => {
    expect((await node('migrate')).stdout).toMatch(/applied \d+ migration\(s\)/);
    const account = JSON.parse((await node('admin', 'create-account', '--email', 'runtime@example.test', '--password', 'runtime password', '--credits', '100')).stdout);
    expect(account).toMatchObject({ email: 'runtime@example.test', paid_balance: 100 });

    for (const [name, ready] of [['api', 'api listening'], ['worker', 'worker started'], ['webhook-dispatcher', 'webhook dispatcher started']] as const) {
      const child = spawn(process.execPath, ['--enable-source-maps', `dist/${name}.js`], { cwd: tree, env, stdio: ['ignore', 'pipe', 'pipe'] });
      services.push(await superviseChild(name, child, ready));
    }
    const call = async (method: string, url: string, headers: Record<string, string>, body?: unknown) => {
      const res = await fetch(`${base}${url}`, { method, headers: { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
      return { status: res.status, body: (await res.json()) as Record<string, any> };
    };
    expect((await call('GET', '/readyz', {})).status).toBe(200);
    const login = await call('POST', '/api/auth/login', { origin: base }, { email: 'runtime@example.test', password: 'runtime password' });
    const session = { authorization: `Bearer ${login.body.token}`, origin: base };
    const key = (await call('POST', '/api/keys', session, { type: 'paid' })).body.plaintext_key as string;
    const secret = (await call('GET', '/api/webhook-secret', session)).body.webhook_secret as string;
    const bullBoard = await fetch(`${base}/admin/queues`, { headers: { authorization: `Basic ${Buffer.from('operator:operator password').toString('base64')}` } });
    expect(bullBoard.status).toBe(200);

    const inputs = {
      'image-generation': { prompt: 'runtime' },
      'video-generation': { prompt: 'runtime', duration_seconds: 1 },
      'face-detection': { image_base64: fixture('astronaut.png') },
    };
    const ids: string[] = [];
    for (const [kind, input] of Object.entries(inputs)) {
      const created = await call('POST', `/api/tasks/${kind}`, { 'x-api-key': key }, { ...input, callback_url: receiver.url('/hooks') });
      expect([kind, created.status]).toEqual([kind, 201]);
      ids.push(created.body.public_id);
    }
    const hooks = await receiver.waitForCount('/hooks', 3, 60_000);
    for (const hook of hooks) {
      expect(hook.headers['x-signature']).toBe(webhookSignature(secret, hook.body));
      expect(JSON.parse(hook.body.toString())).toMatchObject({ status: 20, error_code: null });
    }
    expect(hooks.map((h) => JSON.parse(h.body.toString()).public_id).sort()).toEqual([...ids].sort());
    const task = await call('GET', `/api/tasks/${ids[1]}`, { 'x-api-key': key });
    expect(task.body.files).toEqual([expect.objectContaining({ name: 'video.mp4' })]);

    for (const service of services.splice(0)) {
      service.child.kill('SIGTERM');
      await waitFor(() => service.child.exitCode !== null, { timeoutMs: 15_000, what: 'the service to stop' });
      expect(service.child.exitCode).toBe(0);
    }
  }, 120_000);
});
