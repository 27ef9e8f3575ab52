import { createKey, seedAccount, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from './support/harness';

/** Values of every JSON type, including the awkward ones. */
const HOSTILE_VALUES: unknown[] = [
  null,
  true,
  0,
  -1,
  1.5,
  1e308,
  -1e308,
  Number.MAX_SAFE_INTEGER + 2,
  '',
  ' ',
  '0',
  'x'.repeat(5000),
  '\u0000',
  '\ud83d\ude00',
  '<script>alert(1)</script>',
  "'; DROP TABLE tasks; --",
  [],
  [1, 2],
  {},
  { nested: { deeper: [null] } },
];

const FIELDS: Record<string, string[]> = {
  'video-generation': ['prompt', 'duration_seconds', 'callback_url', 'payload'],
  'image-generation': ['prompt', 'width', 'height', 'callback_url', 'payload'],
  'face-detection': ['image_url', 'image_base64', 'callback_url', 'payload'],
};

const VALID: Record<string, Record<string, unknown>> = {
  'video-generation': { prompt: 'p' },
  'image-generation': { prompt: 'p' },
  'face-detection': { image_url: 'https://img.example/a.png' },
};

describe('bad input never produces a 500', () => {
  let api: TestApi;
  let account: TestAccount;
  let key: CreatedKey;
  beforeAll(async () => {
    api = await startApi({ RATE_LIMIT_PAID_PER_MINUTE: '100000' });
    account = await seedAccount(api, { credits: 1_000_000 });
    key = await createKey(api, account, { type: 'paid' });
  });
  afterAll(async () => {
    await api.close();
  });

  it('every field of every creation endpoint, given every JSON type: 201 or a 400 with a message', async () => {
    for (const [kind, fields] of Object.entries(FIELDS)) {
      for (const field of fields) {
        for (const value of HOSTILE_VALUES) {
          const body = { ...VALID[kind], [field]: value };
          const res = await api.req('POST', `/api/tasks/${kind}`, { headers: withKey(key), body });
          expect({ kind, field, value, ok: [201, 400].includes(res.status) }).toEqual({ kind, field, value, ok: true });
          expect(res.headers.get('content-type')).toMatch(/^application\/json/);
          if (res.status === 400) expect(typeof res.body.message).toBe('string');
          else expect(res.body.public_id).toMatch(/^task_/);
        }
      }
    }
  });

  it('malformed JSON, wrong content types, non-object bodies and empty bodies are 4xx with JSON', async () => {
    const cases: Array<{ body?: string; type?: string; status: number; message?: string }> = [
      { body: '{"prompt": "p",', status: 400, message: 'Malformed JSON body.' },
      { body: '{prompt: p}', status: 400, message: 'Malformed JSON body.' },
      { body: '\u0000\u0001', status: 400 },
      { body: 'prompt=p', type: 'application/x-www-form-urlencoded', status: 415, message: 'Content-Type must be application/json.' },
      { body: '{"prompt":"p"}', type: 'text/plain', status: 415 },
      { body: '[]', status: 400, message: 'Request body must be a JSON object.' },
      { body: '"text"', status: 400 },
      { body: '42', status: 400 },
      { body: 'null', status: 400 },
      { status: 400, message: 'Request body must be a JSON object.' },
      { body: '{"prompt":"p","prompt":5}', status: 400 },
    ];
    for (const c of cases) {
      const headers: Record<string, string> = { ...withKey(key) };
      if (c.type) headers['content-type'] = c.type;
      else if (c.body !== undefined) headers['content-type'] = 'application/json';
      const res = await api.req('POST', '/api/tasks/image-generation', { headers, body: c.body });
      expect({ body: c.body, status: res.status }).toEqual({ body: c.body, status: c.status });
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
      if (c.message) expect(res.body.message).toBe(c.message);
    }
  });

  it('oversized bodies are 413', async () => {
    const big = JSON.stringify({ prompt: 'p', payload: 'x'.repeat(2 * 1024 * 1024) });
    const res = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: big });
    expect(res.status).toBe(413);
    expect(res.body.message).toMatch(/^Request body too large/);
    const login = await api.req('POST', '/api/auth/login', { body: JSON.stringify({ email: 'a@b.c', password: 'x'.repeat(100_000) }) });
    expect(login.status).toBe(413);
  });

  it('deeply nested payloads: 64 levels are stored exactly, deeper ones are a 400 (not a stack overflow)', async () => {
    const nested = (depth: number) => '['.repeat(depth) + ']'.repeat(depth);
    const ok = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: `{"prompt":"p","payload":${nested(64)}}` });
    expect(ok.status).toBe(201);
    expect(ok.text).toContain(`"payload":${nested(64)}`);
    for (const depth of [65, 20_000]) {
      const res = await api.req('POST', '/api/tasks/image-generation', { headers: withKey(key), body: `{"prompt":"p","payload":${nested(depth)}}` });
      expect(res.status).toBe(400);
      expect(res.body.message).toBe('payload must be nested at most 64 levels deep.');
    }
  });

  it('undecodable or hostile paths are 4xx JSON', async () => {
    for (const path of ['/api/tasks/%E0%A4%A', '/api/tasks/%', '/api/tasks/task_x/files/%ZZ', '/api/keys/%E0%A4%A/revoke', '/api/tasks/../../etc/passwd']) {
      const res = await api.req(path.startsWith('/api/keys') ? 'POST' : 'GET', path, { headers: path.startsWith('/api/keys') ? account.auth : withKey(key) });
      expect({ path, client: res.status >= 400 && res.status < 500 }).toEqual({ path, client: true });
      expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    }
  });

  it('unknown routes and methods are 404 JSON', async () => {
    for (const [method, path] of [
      ['GET', '/nope'],
      ['DELETE', '/api/tasks'],
      ['PUT', '/api/keys'],
      ['POST', '/api/tasks/audio-generation'],
    ] as const) {
      const res = await api.req(method, path, { headers: path.startsWith('/api/tasks') ? withKey(key) : account.auth });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: 'Not found.' });
    }
  });

  it('console bodies of the wrong shape are 400', async () => {
    for (const body of ['{', '[]', '{"type":"paid","extra":1}', '{"type":null}', '{"type":"trial","grant_id":7}']) {
      const res = await api.req('POST', '/api/keys', { headers: { ...account.auth, 'content-type': 'application/json' }, body });
      expect({ body, status: res.status }).toEqual({ body, status: 400 });
      expect(typeof res.body.message).toBe('string');
    }
  });
});
