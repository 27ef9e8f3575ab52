// Absolute URLs and the console's same-origin check come from PUBLIC_BASE_URL (or, outside
// production, from HOST and PORT), never from the Host header, which any client can set: a forged
// Host must neither plant its name in Location and file URLs nor make a foreign Origin "same".
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { TaskStatus } from '@taskapi/domain';
import { TaskRows } from '@taskapi/task-lifecycle';
import { newId } from '@taskapi/ids';
import { TEST_PASSWORD } from '@taskapi/testing';
import { createKey, seedAccount, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from './support/harness';

const FORGED_HOST = 'evil.example';

interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: any;
}

/** One request with a Host header of our choosing (fetch() always sends the URL's own host). */
function rawRequest(api: TestApi, method: string, urlPath: string, headers: Record<string, string>, body?: unknown): Promise<RawResponse> {
  const { hostname, port } = new URL(api.url);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        hostname,
        port,
        method,
        path: urlPath,
        headers: { ...headers, ...(payload ? { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(payload)) } : {}) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: unknown;
          try {
            parsed = text ? JSON.parse(text) : undefined;
          } catch {
            parsed = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parsed });
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

/** A completed task with one output file, so its JSON carries a file URL. */
async function taskWithFile(api: TestApi, key: CreatedKey): Promise<string> {
  const created = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'p' } });
  const publicId = created.body.public_id as string;
  fs.mkdirSync(path.join(api.config.filesDir, publicId), { recursive: true });
  fs.writeFileSync(path.join(api.config.filesDir, publicId, 'image.png'), 'png');
  await new TaskRows(api.deps.db.pool).finish(publicId, null, { status: TaskStatus.completed, result: {}, files: [{ name: 'image.png', content_type: 'image/png', size: 3 }] }, newId('delivery'));
  return publicId;
}

describe.each([
  ['derived from HOST and PORT', {}],
  ['set by PUBLIC_BASE_URL', { PUBLIC_BASE_URL: 'https://tasks.example.com/' }],
])('public base URL %s', (_name, overrides: Record<string, string>) => {
  let api: TestApi;
  let account: TestAccount;
  let key: CreatedKey;
  let base: string;

  beforeAll(async () => {
    api = await startApi(overrides);
    account = await seedAccount(api, { credits: 100 });
    key = await createKey(api, account, { type: 'paid' });
    base = overrides.PUBLIC_BASE_URL ? 'https://tasks.example.com' : api.url;
  });
  afterAll(() => api.close());

  it('builds Location and file URLs whatever the Host header says', async () => {
    expect(api.config.publicBaseUrl).toBe(base);
    const created = await rawRequest(api, 'POST', '/api/tasks/image-generation', { host: FORGED_HOST, ...withKey(key) }, { prompt: 'p' });
    expect(created.status).toBe(201);
    expect(created.headers.location).toBe(`${base}/api/tasks/${created.body.public_id}`);

    const publicId = await taskWithFile(api, key);
    const read = await rawRequest(api, 'GET', `/api/tasks/${publicId}`, { host: FORGED_HOST, ...withKey(key) });
    const signed = (id: string) => expect.stringMatching(new RegExp(`^${base.replace(/[.]/g, '\\.')}/api/files/${id}/image\\.png\\?expires=\\d+&signature=[\\w-]{43}$`));
    expect(read.body.files[0].url).toEqual(signed(publicId));
    const list = await rawRequest(api, 'GET', '/api/tasks?limit=5', { host: FORGED_HOST, ...withKey(key) });
    expect(list.body.data.find((t: { public_id: string }) => t.public_id === publicId).files[0].url).toEqual(signed(publicId));
    const consoleRead = await rawRequest(api, 'GET', `/api/console/tasks/${publicId}`, { host: FORGED_HOST, ...account.auth });
    expect(consoleRead.body.files[0].url).toBe(`${base}/api/console/tasks/${publicId}/files/image.png`);
  });

  it('a forged Host does not make its own origin "same-origin"', async () => {
    const cookie = `session=${account.token}`;
    const forged = await rawRequest(api, 'POST', '/api/webhook-secret/rotate', { host: FORGED_HOST, origin: `http://${FORGED_HOST}`, cookie });
    expect(forged.status).toBe(403);
    expect(forged.body).toEqual({ message: 'Cross-site request refused.' });
    const login = await rawRequest(api, 'POST', '/api/auth/login', { host: FORGED_HOST, origin: `http://${FORGED_HOST}` }, { email: account.email, password: TEST_PASSWORD });
    expect(login.status).toBe(403);

    // The configured origin is what counts, whatever Host the request carries.
    const ours = await rawRequest(api, 'POST', '/api/webhook-secret/rotate', { host: FORGED_HOST, origin: new URL(base).origin, cookie });
    expect(ours.status).toBe(200);
  });
});
