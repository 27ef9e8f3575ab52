// The registry's router (http/mount-routes.ts, find-my-way) serves it as Express's router did:
// paths match case-insensitively and with an optional trailing slash, HEAD is answered by the GET
// route, a scope authenticates before anything below it is matched or decoded, and `If-None-Match:
// *` gets a 304. Where find-my-way's own behaviour differs from Express's, it is followed:
// OPTIONS is the generic 404 (Express answered 200 with `Allow`), and a path below /api whose
// percent-encoding is malformed is a 400 for every method the registry has routes of, matched or
// not (Express: 400 only when a route matched it, else 404); a method no route has is a 404.
import { request } from 'undici';
import { createKey, seedAccount, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from './support/harness';

let api: TestApi;
let account: TestAccount;
let key: CreatedKey;
let taskId: string;

beforeAll(async () => {
  api = await startApi();
  account = await seedAccount(api, { credits: 100, label: 'routes' });
  key = await createKey(api, account, { type: 'paid' });
  const created = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: { prompt: 'routes', width: 64, height: 64 } });
  taskId = created.body.public_id;
});

afterAll(async () => {
  await api.close();
});

describe("the registry's router", () => {
  it('matches paths case-insensitively and with a trailing slash', async () => {
    for (const path of [`/api/tasks/${taskId}`, `/API/Tasks/${taskId}`, `/api/tasks/${taskId}/`]) {
      const res = await api.req('GET', path, { headers: withKey(key) });
      expect({ path, status: res.status, id: res.body.public_id }).toEqual({ path, status: 200, id: taskId });
    }
    expect((await api.req('GET', '/api/tasks/', { headers: withKey(key) })).body.data).toEqual(expect.any(Array));
    expect((await api.req('GET', `/api/tasks/${taskId}//`, { headers: withKey(key) })).status).toBe(404);
  });

  it('answers HEAD with the GET route: its status and headers, no body', async () => {
    const get = await api.req('GET', `/api/tasks/${taskId}`, { headers: withKey(key) });
    const head = await api.req('HEAD', `/api/tasks/${taskId}`, { headers: withKey(key) });
    expect(head.status).toBe(200);
    expect(head.text).toBe('');
    expect(head.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(head.headers.get('content-length')).toBe(get.headers.get('content-length'));
    expect(head.headers.get('ratelimit-policy')).toBe(get.headers.get('ratelimit-policy'));
  });

  it('authenticates a scope before matching or decoding below it', async () => {
    // Unknown, undecodable or wrong-method paths below /api/tasks: 401 without a key...
    for (const [method, path] of [
      ['GET', '/api/tasks/%E0%A4%A'],
      ['GET', '/api/tasks/no/such/thing'],
      ['DELETE', `/api/tasks/${taskId}`],
      ['GET', '/API/TASKS/anything'],
    ] as const) {
      const res = await api.req(method, path);
      expect({ method, path, status: res.status, body: res.body }).toEqual({ method, path, status: 401, body: { message: 'API key required.' } });
    }
    // ...and with one, a 400 for the undecodable parameter and a 404 for what does not exist.
    expect((await api.req('GET', '/api/tasks/%E0%A4%A', { headers: withKey(key) })).status).toBe(400);
    expect((await api.req('GET', '/api/tasks/no/such/thing', { headers: withKey(key) })).body).toEqual({ message: 'Not found.' });
    expect((await api.req('DELETE', `/api/tasks/${taskId}`, { headers: withKey(key) })).body).toEqual({ message: 'Not found.' });
  });

  it('decodes a parameter of a route outside any scope when it matches, before anything else', async () => {
    const res = await api.req('GET', `/api/files/${taskId}/%ZZ`);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    // A decodable one reaches the route, which checks its signature.
    expect((await api.req('GET', `/api/files/${taskId}/image%2Epng`)).status).toBe(403);
  });

  it('leaves paths outside the registry to the rest of the app', async () => {
    expect((await api.req('GET', '/nowhere')).body).toEqual({ message: 'Not found.' });
    expect((await api.req('GET', '/healthz/')).status).toBe(200);
    expect((await api.req('GET', '/docs')).headers.get('content-type')).toMatch(/^text\/html/);
  });

  it('answers If-None-Match: * on a GET with 304 and no body, as Express did', async () => {
    // undici's request, not fetch: fetch adds Cache-Control: no-cache to a conditional request.
    const get = async (method: 'GET' | 'POST', path: string, headers: Record<string, string>) => {
      const res = await request(`${api.url}${path}`, { method, headers: { ...withKey(key), ...headers } });
      return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
    };
    const res = await get('GET', `/api/tasks/${taskId}`, { 'if-none-match': '*' });
    expect(res.status).toBe(304);
    expect(res.text).toBe('');
    expect(res.headers.ratelimit).toMatch(/^"minute";r=\d+;t=\d+$/);
    // Not when the client asks for a fresh answer, nor on a request that changes something.
    expect((await get('GET', `/api/tasks/${taskId}`, { 'if-none-match': '*', 'cache-control': 'no-cache' })).status).toBe(200);
    expect((await get('POST', `/api/tasks/${taskId}/cancel`, { 'if-none-match': '*' })).status).toBe(200);
  });

  it('answers OPTIONS with the generic 404, and a malformed path with a 400 for every method it has routes of (both after a scope authenticates)', async () => {
    expect((await api.req('OPTIONS', `/api/tasks/${taskId}`)).status).toBe(401);
    expect((await api.req('GET', '/api/tasks/%ZZ/cancel')).status).toBe(401);
    for (const [method, path] of [
      ['OPTIONS', `/api/tasks/${taskId}`],
      ['OPTIONS', '/api/openapi.json'],
      ['DELETE', '/api/files/x/%ZZ'],
    ] as const) {
      const res = await api.req(method, path, { headers: withKey(key) });
      expect({ method, path, status: res.status, body: res.body }).toEqual({ method, path, status: 404, body: { message: 'Not found.' } });
    }
    for (const [method, path] of [
      ['GET', '/api/tasks/%ZZ/cancel'],
      ['POST', '/api/files/x/%ZZ'],
    ] as const) {
      const res = await api.req(method, path, { headers: withKey(key) });
      expect({ method, path, status: res.status, json: res.headers.get('content-type') }).toEqual({ method, path, status: 400, json: expect.stringMatching(/^application\/json/) });
    }
  });

  it('marks every /api answer not to be cached, whatever the case of its path', async () => {
    for (const path of [`/api/tasks/${taskId}`, `/API/TASKS/${taskId}`]) {
      expect((await api.req('GET', path, { headers: withKey(key) })).headers.get('cache-control')).toBe('no-store');
    }
    expect((await api.req('GET', '/docs')).headers.get('cache-control')).not.toBe('no-store');
  });
});

