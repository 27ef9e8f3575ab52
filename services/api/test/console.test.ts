import jwt from 'jsonwebtoken';
import { TEST_PASSWORD, waitFor } from '@taskapi/testing';
import { newId } from '@taskapi/ids';
import { createKey, expireGrant, seedAccount, seedGrant, startApi, withKey, type TestAccount, type TestApi } from './support/harness';

const SESSION_ENDPOINTS: Array<[string, string]> = [
  ['GET', '/api/credits/balance'],
  ['GET', '/api/keys'],
  ['POST', '/api/keys'],
  ['POST', `/api/keys/${newId('key')}/revoke`],
  ['POST', `/api/keys/${newId('key')}/reissue`],
  ['POST', `/api/keys/${newId('key')}/reveal`],
  ['GET', '/api/trial-grants'],
  ['GET', '/api/webhook-secret'],
  ['POST', '/api/webhook-secret/rotate'],
  ['GET', '/api/auth/session'],
  ['GET', '/api/console/tasks'],
  ['GET', `/api/console/tasks/${newId('task')}`],
  ['GET', `/api/console/tasks/${newId('task')}/files/image.png`],
  ['POST', '/api/auth/logout'],
];

describe('console API', () => {
  let api: TestApi;
  let account: TestAccount;
  beforeAll(async () => {
    api = await startApi();
    account = await seedAccount(api, { credits: 25 });
  });
  afterAll(async () => {
    await api.close();
  });

  describe('login and sessions', () => {
    it('logs in with a JWT and an HttpOnly, SameSite=Strict session cookie valid for 12 hours', async () => {
      const res = await api.req('POST', '/api/auth/login', { body: { email: account.email.toUpperCase(), password: TEST_PASSWORD } });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['expires_at', 'token']);
      const hours = (new Date(res.body.expires_at).getTime() - Date.now()) / 3_600_000;
      expect(hours).toBeGreaterThan(11.9);
      expect(hours).toBeLessThanOrEqual(12);
      const cookie = res.headers.get('set-cookie') ?? '';
      expect(cookie).toMatch(new RegExp(`^session=${res.body.token.replace(/\./g, '\\.')};`));
      expect(cookie).toContain('HttpOnly');
      expect(cookie).toContain('SameSite=Strict');
      expect(cookie).toContain('Path=/');
      expect(cookie).toContain('Max-Age=43200');
      const header = JSON.parse(Buffer.from(res.body.token.split('.')[0], 'base64url').toString());
      expect(header.alg).toBe('HS256');
    });

    it('refuses bad credentials with one message for unknown e-mail and wrong password', async () => {
      for (const body of [
        { email: account.email, password: 'wrong password' },
        { email: 'nobody@example.test', password: TEST_PASSWORD },
      ]) {
        const res = await api.req('POST', '/api/auth/login', { body });
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ message: 'Invalid email or password.' });
        expect(res.headers.get('set-cookie')).toBeNull();
      }
      for (const body of [{}, { email: account.email }, { email: 1, password: 2 }, [], 'x']) {
        expect((await api.req('POST', '/api/auth/login', { body })).status).toBe(400);
      }
    });

    it('every session endpoint: no session → 401 "Login required."; X-Api-Key → 401 session-only message', async () => {
      const key = await createKey(api, account, { type: 'paid' });
      const expired = jwt.sign({}, api.config.jwtSecret, { algorithm: 'HS256', subject: account.id, jwtid: 'ses_x', issuer: 'task-api', audience: 'task-api-console', expiresIn: -10 });
      const otherSecret = jwt.sign({}, 'another-secret-another-secret-another-secret', { algorithm: 'HS256', subject: account.id, jwtid: 'ses_y', issuer: 'task-api', audience: 'task-api-console', expiresIn: 600 });
      const noneAlg = `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from(JSON.stringify({ sub: account.id, jti: 'ses_z', iss: 'task-api', aud: 'task-api-console', exp: Math.floor(Date.now() / 1000) + 600 })).toString('base64url')}.`;
      for (const [method, path] of SESSION_ENDPOINTS) {
        for (const headers of [
          {},
          { authorization: 'Bearer' },
          { authorization: 'Basic abc' },
          { authorization: 'Bearer not.a.jwt' },
          { authorization: `Bearer ${expired}` },
          { authorization: `Bearer ${otherSecret}` },
          { authorization: `Bearer ${noneAlg}` },
          { cookie: 'session=garbage' },
        ] as Record<string, string>[]) {
          const res = await api.req(method, path, { headers });
          expect({ method, path, headers, status: res.status, body: res.body }).toEqual({ method, path, headers, status: 401, body: { message: 'Login required.' } });
        }
        for (const headers of [withKey(key), { ...withKey(key), ...account.auth }, { 'x-api-key': '' }]) {
          const res = await api.req(method, path, { headers });
          expect(res.status).toBe(401);
          expect(res.body).toEqual({ message: 'This endpoint requires a login session. API keys are not accepted.' });
        }
      }
    });

    it('accepts the cookie; cookie requests that change state must be same-origin', async () => {
      const login = await api.req('POST', '/api/auth/login', { body: { email: account.email, password: TEST_PASSWORD } });
      const cookie = { cookie: `session=${login.body.token}` };
      expect((await api.req('GET', '/api/credits/balance', { headers: cookie })).status).toBe(200);

      const noOrigin = await api.req('POST', '/api/webhook-secret/rotate', { headers: cookie });
      expect(noOrigin.status).toBe(403);
      expect(noOrigin.body).toEqual({ message: 'Cross-site request refused.' });
      const crossSite = await api.req('POST', '/api/webhook-secret/rotate', { headers: { ...cookie, 'sec-fetch-site': 'cross-site', origin: api.url } });
      expect(crossSite.status).toBe(403);
      const foreignOrigin = await api.req('POST', '/api/webhook-secret/rotate', { headers: { ...cookie, origin: 'https://evil.example' } });
      expect(foreignOrigin.status).toBe(403);

      expect((await api.req('POST', '/api/webhook-secret/rotate', { headers: { ...cookie, origin: api.url } })).status).toBe(200);
      expect((await api.req('POST', '/api/webhook-secret/rotate', { headers: { ...cookie, 'sec-fetch-site': 'same-origin' } })).status).toBe(200);
      // Bearer tokens are not sent by browsers on their own: no origin check needed.
      expect((await api.req('POST', '/api/webhook-secret/rotate', { headers: account.auth })).status).toBe(200);
    });

    it('refuses a login form posted from another site', async () => {
      const res = await api.req('POST', '/api/auth/login', {
        headers: { origin: 'https://evil.example' },
        body: { email: account.email, password: TEST_PASSWORD },
      });
      expect(res.status).toBe(403);
    });

    it('logout ends the session everywhere and clears the cookie', async () => {
      const login = await api.req('POST', '/api/auth/login', { body: { email: account.email, password: TEST_PASSWORD } });
      const auth = { authorization: `Bearer ${login.body.token}` };
      const me = await api.req('GET', '/api/auth/session', { headers: auth });
      expect(me.body).toEqual({ account_id: account.id, email: account.email, api_version: '2026-11-01', expires_at: login.body.expires_at });
      const out = await api.req('POST', '/api/auth/logout', { headers: auth });
      expect(out.status).toBe(204);
      expect(out.headers.get('set-cookie')).toMatch(/^session=;/);
      expect((await api.req('GET', '/api/auth/session', { headers: auth })).status).toBe(401);
      expect((await api.req('GET', '/api/auth/session', { headers: account.auth })).status).toBe(200);
    });
  });

  describe('keys', () => {
    it('lists keys with prefixes and statuses, never secrets', async () => {
      const acct = await seedAccount(api);
      const paid = await createKey(api, acct, { type: 'paid' });
      const grant = await seedGrant(api, acct, 5);
      const trial = await createKey(api, acct, { type: 'trial', grant_id: grant });
      const revoked = await createKey(api, acct, { type: 'paid' });
      await api.req('POST', `/api/keys/${revoked.id}/revoke`, { headers: acct.auth });
      await api.req('GET', '/api/tasks', { headers: withKey(paid) });

      // last_used_at is written after the request is answered, off its path.
      const res = await waitFor(
        async () => {
          const list = await api.req('GET', '/api/keys', { headers: acct.auth });
          return list.body.data?.find((k: { id: string; last_used_at: string | null }) => k.id === paid.id)?.last_used_at ? list : undefined;
        },
        { what: "the paid key's last use to be recorded" },
      );
      expect(res.status).toBe(200);
      for (const secret of [paid.plaintext, trial.plaintext, revoked.plaintext]) expect(res.text).not.toContain(secret.slice(16));
      expect(res.text).not.toMatch(/hash|ciphertext/i);
      const byId = Object.fromEntries(res.body.data.map((k: { id: string }) => [k.id, k]));
      expect(byId[paid.id]).toEqual({
        id: paid.id,
        type: 'paid',
        key_prefix: paid.prefix,
        status: 'active',
        grant_id: null,
        created_at: expect.any(String),
        last_used_at: expect.any(String),
        revoked_at: null,
        spend_limit: null,
        spent: 0,
      });
      expect(byId[trial.id]).toMatchObject({ type: 'trial', status: 'active', grant_id: grant, last_used_at: null });
      expect(byId[revoked.id]).toMatchObject({ status: 'revoked', revoked_at: expect.any(String) });

      await expireGrant(api, grant);
      const after = await api.req('GET', '/api/keys?type=trial', { headers: acct.auth });
      expect(after.body.data).toEqual([expect.objectContaining({ id: trial.id, status: 'expired' })]);
    });

    it('creates trial keys only for the account\'s unexpired grants with quota, one active key per grant', async () => {
      const acct = await seedAccount(api);
      const stranger = await seedAccount(api);
      const grant = await seedGrant(api, acct, 5);
      const expired = await seedGrant(api, acct, 5, -1_000);
      const empty = await seedGrant(api, acct, 1);
      await api.deps.db.prisma.trialGrant.update({ where: { id: empty }, data: { quotaRemaining: 0 } });
      const foreign = await seedGrant(api, stranger, 5);

      const post = (body: unknown) => api.req('POST', '/api/keys', { headers: acct.auth, body });
      const created = await post({ type: 'trial', grant_id: grant });
      expect(created.status).toBe(201);
      expect(Object.keys(created.body).sort()).toEqual(['key', 'plaintext_key']);
      expect(created.body.plaintext_key).toMatch(/^sk-test-[A-Za-z0-9]{40}$/);

      expect(await post({ type: 'trial', grant_id: grant })).toMatchObject({
        status: 409,
        body: { message: 'This trial grant already has an active key. Revoke or reissue that key instead.' },
      });
      expect(await post({ type: 'trial', grant_id: expired })).toMatchObject({ status: 422, body: { message: 'This trial grant has expired.' } });
      expect(await post({ type: 'trial', grant_id: empty })).toMatchObject({ status: 422, body: { message: 'This trial grant has no remaining quota.' } });
      expect(await post({ type: 'trial', grant_id: foreign })).toMatchObject({ status: 404, body: { message: 'Trial grant not found.' } });
      for (const body of [{ type: 'trial' }, { type: 'trial', grant_id: 'nope' }, { type: 'gold' }, { type: 'paid', grant_id: grant }, {}, null]) {
        expect((await post(body)).status).toBe(400);
      }
    });

    it('allows exactly one of many concurrent trial key creations for one grant', async () => {
      const acct = await seedAccount(api);
      const grant = await seedGrant(api, acct, 5);
      const results = await Promise.all(
        Array.from({ length: 10 }, () => api.req('POST', '/api/keys', { headers: acct.auth, body: { type: 'trial', grant_id: grant } })),
      );
      expect(results.filter((r) => r.status === 201)).toHaveLength(1);
      expect(results.filter((r) => r.status === 409)).toHaveLength(9);
    });

    it('revokes (idempotently), reissues and reveals', async () => {
      const acct = await seedAccount(api, { credits: 10 });
      const key = await createKey(api, acct, { type: 'paid' });

      const revealed = await api.req('POST', `/api/keys/${key.id}/reveal`, { headers: acct.auth });
      expect(revealed.status).toBe(200);
      expect(revealed.body).toEqual({ plaintext_key: key.plaintext });
      expect(await api.deps.db.prisma.apiKeyReveal.count({ where: { apiKeyId: key.id } })).toBe(1);

      const reissued = await api.req('POST', `/api/keys/${key.id}/reissue`, { headers: acct.auth });
      expect(reissued.status).toBe(201);
      expect(reissued.body.key).toMatchObject({ type: 'paid', status: 'active' });
      expect(reissued.body.replaced_key).toMatchObject({ id: key.id, status: 'revoked' });
      expect(reissued.body.plaintext_key).not.toBe(key.plaintext);
      expect((await api.req('GET', '/api/tasks', { headers: withKey(key) })).body).toEqual({ message: 'Invalid API key.' });
      expect((await api.req('GET', '/api/tasks', { headers: withKey(reissued.body.plaintext_key) })).status).toBe(200);

      expect(await api.req('POST', `/api/keys/${key.id}/reveal`, { headers: acct.auth })).toMatchObject({
        status: 409,
        body: { message: 'Only active keys can be revealed.' },
      });
      expect(await api.req('POST', `/api/keys/${key.id}/reissue`, { headers: acct.auth })).toMatchObject({
        status: 409,
        body: { message: 'This key is revoked; create a new key instead.' },
      });

      const newId_ = reissued.body.key.id;
      const revoked = await api.req('POST', `/api/keys/${newId_}/revoke`, { headers: acct.auth });
      expect(revoked.status).toBe(200);
      expect(revoked.body).toMatchObject({ id: newId_, status: 'revoked' });
      const again = await api.req('POST', `/api/keys/${newId_}/revoke`, { headers: acct.auth });
      expect(again.status).toBe(200);
      expect(again.body.revoked_at).toBe(revoked.body.revoked_at);
    });

    it('reissues a trial key on the same grant, and refuses once the grant has expired', async () => {
      const acct = await seedAccount(api);
      const grant = await seedGrant(api, acct, 5);
      const key = await createKey(api, acct, { type: 'trial', grant_id: grant });
      const reissued = await api.req('POST', `/api/keys/${key.id}/reissue`, { headers: acct.auth });
      expect(reissued.status).toBe(201);
      expect(reissued.body.key).toMatchObject({ type: 'trial', grant_id: grant, status: 'active' });
      expect(reissued.body.plaintext_key).toMatch(/^sk-test-/);

      await expireGrant(api, grant);
      const refused = await api.req('POST', `/api/keys/${reissued.body.key.id}/reissue`, { headers: acct.auth });
      expect(refused).toMatchObject({ status: 422, body: { message: 'This trial grant has expired.' } });
      // The refused reissue changed nothing: the key is still the grant's (expired) key.
      const keys = await api.req('GET', '/api/keys?type=trial', { headers: acct.auth });
      expect(keys.body.data.map((k: { status: string }) => k.status).sort()).toEqual(['expired', 'revoked']);
    });

    it('another account\'s keys are not found; hostile ids are 404', async () => {
      const acct = await seedAccount(api);
      const stranger = await seedAccount(api);
      const key = await createKey(api, acct, { type: 'paid' });
      for (const id of [key.id, newId('key'), 'key_', "key_' OR 1=1 --", '..%2Fadmin', 'k'.repeat(300)]) {
        for (const action of ['revoke', 'reissue', 'reveal']) {
          const res = await api.req('POST', `/api/keys/${encodeURIComponent(id)}/${action}`, { headers: stranger.auth });
          expect(res.status).toBe(404);
          expect(res.body).toEqual({ message: 'API key not found.' });
        }
      }
      expect((await api.req('GET', '/api/tasks', { headers: withKey(key) })).status).toBe(200);
    });
  });

  describe('balance, grants and webhook secret', () => {
    it('shows the paid balance and trial grants with remaining quota, expiry and binding', async () => {
      const acct = await seedAccount(api, { credits: 42 });
      const active = await seedGrant(api, acct, 7);
      const expired = await seedGrant(api, acct, 3, -1_000);
      const key = await createKey(api, acct, { type: 'trial', grant_id: active });

      const balance = await api.req('GET', '/api/credits/balance', { headers: acct.auth });
      expect(balance.status).toBe(200);
      expect(balance.body.paid_balance).toBe(42);
      const grants = Object.fromEntries(balance.body.trial_grants.map((g: { id: string }) => [g.id, g]));
      expect(grants[active]).toEqual({
        id: active,
        quota_total: 7,
        quota_remaining: 7,
        expires_at: expect.any(String),
        created_at: expect.any(String),
        usable: true,
        bound_key_id: key.id,
        bound_key_prefix: key.prefix,
      });
      expect(grants[expired]).toMatchObject({ usable: false, bound_key_prefix: null });

      const list = await api.req('GET', '/api/trial-grants', { headers: acct.auth });
      expect(list.body.data).toEqual(balance.body.trial_grants);
    });

    it('shows and rotates the webhook secret; the old one is gone at once', async () => {
      const acct = await seedAccount(api);
      const first = await api.req('GET', '/api/webhook-secret', { headers: acct.auth });
      expect(first.status).toBe(200);
      expect(first.body.webhook_secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(Buffer.from(first.body.webhook_secret.slice(6), 'base64')).toHaveLength(32);

      const rotated = await api.req('POST', '/api/webhook-secret/rotate', { headers: acct.auth });
      expect(rotated.status).toBe(200);
      expect(rotated.body.webhook_secret).toMatch(/^whsec_/);
      expect(rotated.body.webhook_secret).not.toBe(first.body.webhook_secret);
      const now = await api.req('GET', '/api/webhook-secret', { headers: acct.auth });
      expect(now.body.webhook_secret).toBe(rotated.body.webhook_secret);

      const other = await seedAccount(api);
      expect((await api.req('GET', '/api/webhook-secret', { headers: other.auth })).body.webhook_secret).not.toBe(rotated.body.webhook_secret);
    });
  });
});
