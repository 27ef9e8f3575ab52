// Browser read tokens (docs/api.md, "Browser read tokens") against a real API, PostgreSQL and Redis:
// minting and its bad input, the public routes answering as the key's routes do, every refusal
// (none, malformed, forged, expired, another task's, a revoked key's: on another replica at the
// very next request), the token opening nothing else, the key's rate limits, forged tokens costing
// no database query, CORS on /api/public only, and the token never in a log line.
import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import { ReadTokens } from '@taskapi/crypto';
import { waitFor } from '@taskapi/testing';
import { createKey, expireGrant, seedAccount, seedGrant, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from './support/harness';

const ORIGIN = 'https://app.example.test';

describe('browser read tokens', () => {
  let api: TestApi;
  let replica: TestApi;
  let account: TestAccount;
  let key: CreatedKey;
  let log = '';
  beforeAll(async () => {
    const stream = new PassThrough();
    stream.on('data', (c: Buffer) => (log += c.toString()));
    // Bull Board open to its operator, so that refusing a token there means something.
    const env = { RATE_LIMIT_PAID_PER_MINUTE: '100000', CORS_ALLOWED_ORIGINS: `${ORIGIN}, http://localhost:5173`, LOG_LEVEL: 'info', ADMIN_USER: 'ops', ADMIN_PASSWORD: 'correct horse battery' };
    api = await startApi(env, { logStream: stream });
    replica = await startApi(env);
    account = await seedAccount(api, { credits: 1_000 });
    key = await createKey(api, account, { type: 'paid' });
  });
  afterAll(async () => {
    await replica?.close();
    await api?.close();
  });

  const create = async (k: CreatedKey = key) =>
    (await api.req('POST', '/api/tasks/face-detection', { headers: withKey(k), body: { image_url: 'https://example.com/a.jpg' } })).body.public_id as string;
  const mint = async (id: string, body?: unknown, k: CreatedKey = key) => api.req('POST', `/api/tasks/${id}/read-token`, { headers: withKey(k), body });
  const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

  it('mints a URL-safe token for one task (default 15 minutes, 60 s to 24 h); bad input is a 400 naming the field', async () => {
    const id = await create();
    const before = Date.now();
    const res = await mint(id);
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['expires_at', 'token']);
    expect(res.body.token).toMatch(/^trt_[A-Za-z0-9_-]+$/);
    expect(res.body.token).not.toContain(key.plaintext.slice(8));
    const expires = new Date(res.body.expires_at).getTime();
    expect(expires - before).toBeGreaterThanOrEqual(899_000);
    expect(expires - before).toBeLessThanOrEqual(901_000);
    const day = await mint(id, { ttl_seconds: 86_400 });
    expect(new Date(day.body.expires_at).getTime() - Date.now()).toBeGreaterThan(86_390_000);
    for (const [body, field] of [
      [{ ttl_seconds: 59 }, 'ttl_seconds'],
      [{ ttl_seconds: 86_401 }, 'ttl_seconds'],
      [{ ttl_seconds: 90.5 }, 'ttl_seconds'],
      [{ ttl_seconds: '900' }, 'ttl_seconds'],
      [{ scope: 'all' }, 'scope'],
    ] as const) {
      const bad = await mint(id, body);
      expect({ body, status: bad.status }).toEqual({ body, status: 400 });
      expect(bad.body.errors.map((e: { field: string }) => e.field)).toEqual([field]);
    }
    // Another account's task, or an unknown one: not found, as for every task route.
    const other = await seedAccount(api, { credits: 10 });
    const otherKey = await createKey(api, other, { type: 'paid' });
    expect((await mint(id, undefined, otherKey)).status).toBe(404);
    expect((await mint('task_0000000000000000000000')).body).toEqual({ message: 'Task not found.' });
    expect((await api.req('POST', `/api/tasks/${id}/read-token`)).body).toEqual({ message: 'API key required.' });
  });

  it('reads the task as the key does: the same JSON, by header or by access_token; files; the event stream', async () => {
    const id = await create();
    const { token } = (await mint(id)).body;
    const withKeyRead = await api.req('GET', `/api/tasks/${id}`, { headers: withKey(key) });
    const byHeader = await api.req('GET', `/api/public/tasks/${id}`, { headers: bearer(token) });
    const byQuery = await replica.req('GET', `/api/public/tasks/${id}?access_token=${token}`);
    expect(byHeader.status).toBe(200);
    expect(byHeader.text).toBe(withKeyRead.text);
    expect(byQuery.text).toBe(withKeyRead.text);
    // Prefer: wait holds the read as it holds the key's (a queued task: answered after the second).
    const waited = await api.req('GET', `/api/public/tasks/${id}`, { headers: { ...bearer(token), prefer: 'wait=1' } });
    expect({ status: waited.status, applied: waited.headers.get('preference-applied'), text: waited.text }).toEqual({ status: 200, applied: 'wait=1', text: withKeyRead.text });
    // A file: the task's own (none for a queued face detection) answers as the key's route.
    expect((await api.req('GET', `/api/public/tasks/${id}/files/result.json`, { headers: bearer(token) })).body).toEqual({ message: 'File not found.' });
    // The event stream, over ?access_token= as an EventSource sends it, ends with the terminal state.
    const ctl = new AbortController();
    const stream = await fetch(`${api.url}/api/public/tasks/${id}/events?access_token=${token}`, { signal: ctl.signal });
    expect(stream.status).toBe(200);
    expect(stream.headers.get('content-type')).toBe('text/event-stream');
    const reader = stream.body!.getReader();
    let text = '';
    const decoder = new TextDecoder();
    const readUntil = async (what: RegExp) => {
      while (!what.test(text)) {
        const { value, done } = await reader.read();
        if (done) break;
        text += decoder.decode(value);
      }
    };
    await readUntil(/event: task\ndata: .*"status":0/);
    await api.deps.taskLifecycle.repair.end(id, { status: 20, result: { faces: [] } });
    await readUntil(/"status":20/);
    ctl.abort();
    expect(text).toContain(`"public_id":"${id}"`);
  });

  it('an event stream opened with a token ends when the token expires, and reconnecting is refused', async () => {
    const id = await create();
    // Sealed here: minting gives 60 s at least. It expires in two to three seconds.
    const expiresAt = Math.floor(Date.now() / 1000) + 3;
    const token = new ReadTokens(api.config.secretsKey).seal({ keyId: key.id, publicId: id, expiresAt });
    const stream = await fetch(`${api.url}/api/public/tasks/${id}/events?access_token=${token}`);
    expect(stream.status).toBe(200);
    // The task is still queued: only the expiry ends the stream (its body is read to the end).
    const text = await stream.text();
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt * 1000);
    expect(text).toMatch(/^event: task\ndata: .*"status":0/);
    const again = await api.req('GET', `/api/public/tasks/${id}/events?access_token=${token}`);
    expect({ status: again.status, body: again.body }).toEqual({ status: 401, body: { message: 'This read token has expired.' } });
  }, 20_000);

  it('refuses with the answer the rules give, never a 500', async () => {
    const id = await create();
    const other = await create();
    const { token } = (await mint(id)).body;
    const tokens = new ReadTokens(api.config.secretsKey);
    const expired = tokens.seal({ keyId: key.id, publicId: id, expiresAt: Math.floor(Date.now() / 1000) - 1 });
    const unknownKey = tokens.seal({ keyId: 'key_0000000000000000000000', publicId: id, expiresAt: Math.floor(Date.now() / 1000) + 600 });
    const forged = new ReadTokens(randomBytes(32)).seal({ keyId: key.id, publicId: id, expiresAt: Math.floor(Date.now() / 1000) + 600 });
    const cases: Array<[Record<string, string>, string, number, string]> = [
      [{}, '', 401, 'Read token required.'],
      // Another scheme (a proxy's credentials) or an empty header is no read token.
      [{ authorization: 'Basic abc' }, '', 401, 'Read token required.'],
      [{ authorization: '' }, '', 401, 'Read token required.'],
      [{ authorization: 'Bearer' }, '', 401, 'Invalid read token.'],
      [bearer('not-a-token'), '', 401, 'Invalid read token.'],
      [bearer(`${token}x`), '', 401, 'Invalid read token.'],
      [bearer(forged), '', 401, 'Invalid read token.'],
      [bearer(unknownKey), '', 401, 'Invalid read token.'],
      [{}, '?access_token=', 401, 'Invalid read token.'],
      [{}, `?access_token=${token}&access_token=${token}`, 401, 'Invalid read token.'],
      [bearer(expired), '', 401, 'This read token has expired.'],
    ];
    for (const [headers, query, status, message] of cases) {
      const res = await api.req('GET', `/api/public/tasks/${id}${query}`, { headers });
      expect({ headers, query, status: res.status, body: res.body }).toEqual({ headers, query, status, body: { message } });
    }
    // Beside another scheme's header, the query's token is read.
    expect((await api.req('GET', `/api/public/tasks/${id}?access_token=${token}`, { headers: { authorization: 'Basic abc' } })).status).toBe(200);
    // A valid token of another task, or a task that does not exist: 404 as an unknown task.
    for (const path of [`/api/public/tasks/${other}`, `/api/public/tasks/${other}/events`, `/api/public/tasks/${other}/files/x.png`, '/api/public/tasks/nope', '/api/public/elsewhere']) {
      const res = await api.req('GET', path, { headers: bearer(token) });
      expect({ path, status: res.status, body: res.body }).toEqual({ path, status: 404, body: path.includes('elsewhere') ? { message: 'Not found.' } : { message: 'Task not found.' } });
    }
  });

  it('opens nothing but /api/public: not /api/tasks, the console or Bull Board', async () => {
    const id = await create();
    const { token } = (await mint(id)).body;
    expect((await api.req('GET', `/api/tasks/${id}`, { headers: bearer(token) })).body).toEqual({ message: 'API key required.' });
    expect((await api.req('GET', `/api/tasks/${id}?access_token=${token}`)).body).toEqual({ message: 'API key required.' });
    expect((await api.req('GET', '/api/console/tasks', { headers: bearer(token) })).status).toBe(401);
    expect((await api.req('GET', '/api/keys', { headers: bearer(token) })).status).toBe(401);
    expect((await api.req('GET', '/admin/queues', { headers: bearer(token) })).status).toBe(401);
    expect((await api.req('POST', `/api/public/tasks/${id}`, { headers: bearer(token) })).status).toBe(404);
  });

  it("a trial key's token ends with its grant: capped when minted, refused once the grant has ended", async () => {
    const trialAccount = await seedAccount(api, { credits: 0 });
    const grantId = await seedGrant(api, trialAccount, 10, 120_000);
    const trial = await createKey(api, trialAccount, { type: 'trial', grant_id: grantId });
    const id = await create(trial);
    const minted = await mint(id, undefined, trial);
    const expires = new Date(minted.body.expires_at).getTime();
    expect(expires - Date.now()).toBeLessThanOrEqual(121_000);
    expect(expires - Date.now()).toBeGreaterThan(100_000);
    // The grant ended early (an operator): a replica that learns the key's facts now refuses the token.
    await expireGrant(api, grantId);
    const res = await replica.req('GET', `/api/public/tasks/${id}`, { headers: bearer(minted.body.token) });
    expect({ status: res.status, body: res.body }).toEqual({ status: 401, body: { message: 'This read token has expired.' } });
  });

  it("dies with its key's revocation at the very next request, on every replica", async () => {
    const k = await createKey(api, account, { type: 'paid' });
    const id = await create(k);
    const { token } = (await mint(id, undefined, k)).body;
    expect((await replica.req('GET', `/api/public/tasks/${id}`, { headers: bearer(token) })).status).toBe(200);
    const revoked = await api.req('POST', `/api/keys/${k.id}/revoke`, { headers: account.auth });
    expect(revoked.status).toBe(200);
    expect((await replica.req('GET', `/api/public/tasks/${id}`, { headers: bearer(token) })).body).toEqual({ message: 'Invalid read token.' });
    expect((await api.req('GET', `/api/public/tasks/${id}`, { headers: bearer(token) })).body).toEqual({ message: 'Invalid read token.' });
  });

  it("counts against the minting key's rate limits", async () => {
    const id = await create();
    const { token } = (await mint(id)).body;
    const remaining = (h: Headers) => Number(/"minute";r=(\d+)/.exec(h.get('ratelimit') ?? '')?.[1]);
    const a = await api.req('GET', `/api/tasks/${id}`, { headers: withKey(key) });
    const b = await api.req('GET', `/api/public/tasks/${id}`, { headers: bearer(token) });
    const c = await api.req('GET', `/api/tasks/${id}`, { headers: withKey(key) });
    expect([remaining(a.headers) - remaining(b.headers), remaining(b.headers) - remaining(c.headers)]).toEqual([1, 1]);
    expect(b.headers.get('ratelimit-policy')).toBe(a.headers.get('ratelimit-policy'));
  });

  it('forged, malformed and expired tokens cost no database query', async () => {
    const id = await create();
    const tokens = new ReadTokens(randomBytes(32));
    const expired = new ReadTokens(api.config.secretsKey).seal({ keyId: key.id, publicId: id, expiresAt: 1 });
    await api.deps.expirySweep.stop();
    const pool = api.deps.db.pool;
    const query = pool.query.bind(pool);
    let queries = 0;
    (pool as any).query = (...args: any[]) => {
      queries++;
      return (query as any)(...args);
    };
    try {
      for (let i = 0; i < 200; i++) {
        const forged = tokens.seal({ keyId: key.id, publicId: id, expiresAt: 2_000_000_000 + i });
        const res = await api.req('GET', `/api/public/tasks/${id}`, { headers: bearer(i % 3 === 0 ? expired : i % 3 === 1 ? forged : `trt_${'x'.repeat(i)}`) });
        expect(res.status).toBe(401);
      }
      expect(queries).toBe(0);
    } finally {
      (pool as any).query = query;
    }
  });

  it('CORS on /api/public only: an allowed origin is answered with itself, a preflight before authentication, other origins with nothing', async () => {
    const id = await create();
    const { token } = (await mint(id)).body;
    const read = await api.req('GET', `/api/public/tasks/${id}`, { headers: { ...bearer(token), origin: ORIGIN } });
    expect(read.headers.get('access-control-allow-origin')).toBe(ORIGIN);
    expect(read.headers.get('vary')).toMatch(/Origin/);
    // A refusal is readable by the page too.
    const refused = await api.req('GET', `/api/public/tasks/${id}`, { headers: { origin: ORIGIN } });
    expect([refused.status, refused.headers.get('access-control-allow-origin')]).toEqual([401, ORIGIN]);
    const preflight = await api.req('OPTIONS', `/api/public/tasks/${id}/events`, {
      headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization, last-event-id, taskapi-version' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
    expect(preflight.headers.get('access-control-allow-methods')).toBe('GET');
    expect(preflight.headers.get('access-control-allow-headers')).toBe('Authorization,TaskApi-Version,Last-Event-ID,Prefer,Range,If-None-Match,If-Modified-Since,If-Range');
    const stranger = await api.req('OPTIONS', `/api/public/tasks/${id}`, { headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' } });
    expect([stranger.status, stranger.headers.get('access-control-allow-origin')]).toEqual([204, null]);
    expect((await api.req('GET', `/api/public/tasks/${id}`, { headers: { ...bearer(token), origin: 'https://evil.example' } })).headers.get('access-control-allow-origin')).toBeNull();
    // No other route ever answers with it.
    for (const [method, path, headers] of [
      ['GET', `/api/tasks/${id}`, withKey(key)],
      ['OPTIONS', `/api/tasks/${id}`, { 'access-control-request-method': 'GET' }],
      ['GET', '/healthz', {}],
      ['GET', '/api/openapi.json', {}],
    ] as const) {
      const res = await api.req(method, path, { headers: { ...headers, origin: ORIGIN } });
      expect({ path, method, acao: res.headers.get('access-control-allow-origin') }).toEqual({ path, method, acao: null });
    }
    // Without CORS_ALLOWED_ORIGINS: no CORS headers at all.
    const plain = await startApi();
    try {
      const k = await createKey(plain, await seedAccount(plain, { credits: 10 }), { type: 'paid' });
      const tid = (await plain.req('POST', '/api/tasks/face-detection', { headers: withKey(k), body: { image_url: 'https://example.com/a.jpg' } })).body.public_id;
      const t = (await plain.req('POST', `/api/tasks/${tid}/read-token`, { headers: withKey(k) })).body.token;
      const res = await plain.req('GET', `/api/public/tasks/${tid}`, { headers: { ...bearer(t), origin: ORIGIN } });
      expect([res.status, res.headers.get('access-control-allow-origin'), res.headers.get('vary')]).toEqual([200, null, null]);
    } finally {
      await plain.close();
    }
  });

  it('never writes a token to a log line', async () => {
    const id = await create();
    const { token } = (await mint(id)).body;
    await api.req('GET', `/api/public/tasks/${id}?access_token=${token}`);
    await api.req('GET', `/api/public/tasks/${id}?access_token=${token}x`);
    await waitFor(() => log.includes(`/api/public/tasks/${id}`), { what: 'the access lines' });
    expect(log).not.toContain(token);
    expect(log).not.toContain(token.slice(4, 40));
  });
});
