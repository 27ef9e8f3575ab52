// Hostile input at the edge (docs/architecture.md): text PostgreSQL cannot store, bodies that are not UTF-8 JSON, session
// tokens signed with our secret but carrying claims of the wrong shape, and what validation says.
import { createHmac } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createLogger } from '@taskapi/logger';
import { TEST_PASSWORD } from '@taskapi/testing';
import { ApiError } from '../src/errors';
import { errorHandler } from '../src/http/error-handler';
import { createKey, seedAccount, startApi, withKey, type CreatedKey, type TestAccount, type TestApi } from './support/harness';

const UNSTORABLE = 'must not contain a NUL character or an unpaired UTF-16 surrogate';

function b64url(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

/** An HS256 token with exactly these claims, signed with `secret` (as a leaked or reused secret would allow). */
function forgeToken(secret: string, claims: Record<string, unknown>): string {
  const unsigned = `${b64url({ alg: 'HS256', typ: 'JWT' })}.${b64url(claims)}`;
  return `${unsigned}.${createHmac('sha256', secret).update(unsigned).digest('base64url')}`;
}

describe('hostile input (docs/architecture.md, hostile input)', () => {
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

  const create = (body: unknown, headers: Record<string, string> = {}) =>
    api.req('POST', '/api/tasks/image-generation', { headers: { ...withKey(key), ...headers }, body });

  it.each([
    ['NUL in prompt', { prompt: 'a\u0000b' }, 'prompt'],
    ['lone high surrogate in prompt', { prompt: 'a\ud800' }, 'prompt'],
    ['lone low surrogate in prompt', { prompt: '\udc00b' }, 'prompt'],
    ['NUL in callback_url', { prompt: 'p', callback_url: 'https://hooks.example/\u0000' }, 'callback_url'],
    ['NUL in an unknown field name', { prompt: 'p', 'x\u0000': 1 }, 'x\u0000'],
  ])('%s: 400 naming the field', async (_name, body, field) => {
    const res = await create(body);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ message: `${field} ${UNSTORABLE}.`, errors: [{ field, message: `${field} ${UNSTORABLE}` }] });
  });

  it('a surrogate pair (an emoji) is ordinary text', async () => {
    const res = await create({ prompt: 'a lighthouse \ud83d\udca1' });
    expect(res.status).toBe(201);
  });

  it('payload keeps NUL and lone surrogates exactly as sent (its JSON text is stored)', async () => {
    const raw = '{"prompt":"p","payload":{"nul":"\\u0000","lone":"\\ud800","pair":"\\ud83d\\ude00"}}';
    const res = await api.req('POST', '/api/tasks/image-generation', { headers: { ...withKey(key), 'content-type': 'application/json' }, body: raw });
    expect(res.status).toBe(201);
    const read = await api.req('GET', `/api/tasks/${res.body.public_id}`, { headers: withKey(key) });
    expect(read.text).toContain('"payload":{"nul":"\\u0000","lone":"\\ud800","pair":"\\ud83d\\ude00"}');
  });

  it('console inputs: NUL in the login e-mail and in a query value are 400s naming them', async () => {
    const login = await api.req('POST', '/api/auth/login', { body: { email: `a\u0000${account.email}`, password: TEST_PASSWORD } });
    expect(login.status).toBe(400);
    expect(login.body.errors).toEqual([{ field: 'email', message: `email ${UNSTORABLE}` }]);
    // (Percent-encoded bytes that are not UTF-8, such as a surrogate's %ED%A0%80, decode to U+FFFD: storable.)
    for (const value of ['%00', 'task_%00', 'task_x%00y']) {
      const res = await api.req('GET', `/api/webhook-deliveries?public_id=${value}`, { headers: account.auth });
      expect({ value, status: res.status, fields: res.body.errors?.map((e: { field: string }) => e.field) }).toEqual({ value, status: 400, fields: ['public_id'] });
    }
  });

  it.each([
    ['application/json; charset=utf-16', 415],
    ['application/json; charset=UTF-16LE', 415],
    ['application/json; charset=latin1', 415],
    ['application/json; charset="iso-8859-1"', 415],
    ['application/json; charset=UTF-8', 201],
    ['application/json;charset="utf-8"', 201],
    ['application/json; charset=utf8', 415],
  ])('Content-Type %s → %i', async (type, status) => {
    const res = await api.req('POST', '/api/tasks/image-generation', { headers: { ...withKey(key), 'content-type': type }, body: '{"prompt":"p"}' });
    expect(res.status).toBe(status);
    if (status === 415) expect(res.body).toEqual({ message: 'Unsupported body encoding; send UTF-8 JSON.' });
  });

  it('console bodies that are not JSON are 415 too', async () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=utf-16']) {
      const res = await api.req('POST', '/api/keys', { headers: { ...account.auth, 'content-type': type }, body: 'type=paid' });
      expect({ type, status: res.status }).toEqual({ type, status: 415 });
      expect(typeof res.body.message).toBe('string');
    }
  });

  it('validation messages name the field in plain words, one errors entry per problem', async () => {
    const missing = await create({});
    expect(missing.status).toBe(400);
    expect(missing.body).toEqual({ message: 'prompt is required.', errors: [{ field: 'prompt', message: 'prompt is required' }] });

    const several = await create({ prompt: 7, width: 5, height: 'tall', colour: 'red' });
    expect(several.status).toBe(400);
    expect(several.body.message).toMatch(/\.$/);
    expect(Object.fromEntries(several.body.errors.map((e: { field: string; message: string }) => [e.field, e.message]))).toEqual({
      prompt: 'prompt must be a string',
      width: 'width must be an integer from 64 to 1024',
      height: 'height must be an integer from 64 to 1024',
      colour: 'colour is not a known field',
    });

    const idempotency = await create({ prompt: 'p' }, { 'idempotency-key': 'spaces are not allowed' });
    expect(idempotency.status).toBe(400);
    expect(idempotency.body.errors).toEqual([{ field: 'Idempotency-Key', message: 'Idempotency-Key must be 1 to 255 printable ASCII characters' }]);

    const limit = await api.req('GET', '/api/tasks?limit=1000', { headers: withKey(key) });
    expect(limit.status).toBe(400);
    expect(limit.body.errors).toEqual([{ field: 'limit', message: expect.stringMatching(/^limit must /) }]);
  });

  it('a session token with claims of the wrong shape is "Login required." on every session endpoint', async () => {
    const now = Math.floor(Date.now() / 1000);
    const good = { sub: account.id, jti: 'ses_0123456789abcdefABCDEF', iss: 'task-api', aud: 'task-api-console', iat: now, exp: now + 3600 };
    expect((await api.req('GET', '/api/auth/session', { headers: { authorization: `Bearer ${forgeToken(api.config.jwtSecret, good)}` } })).status).toBe(200);
    const bad: Record<string, Record<string, unknown>> = {
      'numeric sub': { ...good, sub: 12345 },
      'object sub': { ...good, sub: { id: account.id } },
      'empty sub': { ...good, sub: '' },
      'sub of another id kind': { ...good, sub: 'key_0123456789abcdefABCDEF' },
      'object jti': { ...good, jti: { a: 1 } },
      'missing jti': { ...good, jti: undefined },
      'exp 1e300': { ...good, exp: 1e300 },
      'exp as a string': { ...good, exp: String(now + 3600) },
      'fractional exp': { ...good, exp: now + 3600.5 },
      'iat in the future': { ...good, iat: now + 86_400 },
      'iat missing': { ...good, iat: undefined },
    };
    for (const [name, claims] of Object.entries(bad)) {
      const authorization = `Bearer ${forgeToken(api.config.jwtSecret, claims)}`;
      for (const [method, path] of [
        ['GET', '/api/auth/session'],
        ['POST', '/api/auth/logout'],
        ['GET', '/api/keys'],
        ['GET', '/api/webhook-deliveries'],
      ] as const) {
        const res = await api.req(method, path, { headers: { authorization } });
        expect({ name, method, path, status: res.status, body: res.body }).toEqual({ name, method, path, status: 401, body: { message: 'Login required.' } });
      }
    }
  });
});

describe('the error middleware and PostgreSQL refusals', () => {
  it('a value PostgreSQL refuses is a 400, not a 500', async () => {
    const api = await startApi();
    const app = express();
    app.get('/refused', async () => {
      // A real refusal from the real server: text with a NUL byte (22021).
      await api.deps.db.pool.query('SELECT $1::text', ['a\u0000b']);
    });
    app.get('/out-of-range', async () => {
      await api.deps.db.pool.query('SELECT $1::smallint', [70_000]);
    });
    app.use(errorHandler(createLogger({ service: 'test', level: 'error' })));
    const server = http.createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      for (const path of ['/refused', '/out-of-range']) {
        const res = await fetch(`${url}${path}`);
        expect({ path, status: res.status, body: await res.json() }).toEqual({ path, status: 400, body: { message: new ApiError('UNSTORABLE_VALUE').message } });
      }
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await api.close();
    }
  });
});
