import { waitFor } from '@taskapi/testing';
import { revokedMarkerKey } from '../src/domain/key-revocation';
import { createKey, expireGrant, seedAccount, seedGrant, startApi, withKey, type TestApi } from './support/harness';

describe('API key authentication', () => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startApi();
  });
  afterAll(async () => {
    await api.close();
  });

  it('requires a key: absent or empty header → 401 "API key required."', async () => {
    const variants: Record<string, string>[] = [{}, { 'x-api-key': '' }, { 'x-api-key': '   ' }];
    for (const headers of variants) {
      const res = await api.req('GET', '/api/tasks', { headers });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'API key required.' });
    }
  });

  it('refuses malformed and unknown keys with 401 "Invalid API key."', async () => {
    const candidates = [
      'abc',
      'sk-live-',
      'sk-live-short',
      'sk-prod-' + 'a'.repeat(40),
      'sk-live-' + 'a'.repeat(39) + '!',
      'sk-live-' + 'a'.repeat(500),
      'Bearer sk-live-' + 'a'.repeat(40),
      'sk-live-' + 'A1b2'.repeat(10), // well-formed, never issued
      'sk-test-' + 'A1b2'.repeat(10),
    ];
    for (const key of candidates) {
      const res = await api.req('GET', '/api/tasks', { headers: withKey(key) });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Invalid API key.' });
    }
  });

  it('accepts a valid paid key and a valid trial key', async () => {
    const account = await seedAccount(api, { credits: 10 });
    const paid = await createKey(api, account, { type: 'paid' });
    const grant = await seedGrant(api, account, 5);
    const trial = await createKey(api, account, { type: 'trial', grant_id: grant });
    expect(paid.plaintext).toMatch(/^sk-live-[A-Za-z0-9]{32,}$/);
    expect(trial.plaintext).toMatch(/^sk-test-[A-Za-z0-9]{32,}$/);
    expect(paid.prefix).toBe(paid.plaintext.slice(0, 16));
    for (const key of [paid, trial]) {
      const res = await api.req('GET', '/api/tasks', { headers: withKey(key) });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: [], next_cursor: null });
    }
  });

  it('a key with its type prefix swapped is not the same key', async () => {
    const account = await seedAccount(api);
    const paid = await createKey(api, account, { type: 'paid' });
    const res = await api.req('GET', '/api/tasks', { headers: withKey(paid.plaintext.replace('sk-live-', 'sk-test-')) });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ message: 'Invalid API key.' });
  });

  it('a revoked key fails on the very next request', async () => {
    const account = await seedAccount(api);
    const key = await createKey(api, account, { type: 'paid' });
    expect((await api.req('GET', '/api/tasks', { headers: withKey(key) })).status).toBe(200);
    expect((await api.req('POST', `/api/keys/${key.id}/revoke`, { headers: account.auth })).status).toBe(200);
    const res = await api.req('GET', '/api/tasks', { headers: withKey(key) });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ message: 'Invalid API key.' });
  });

  it('an expired trial key gets 401 with the prefixes of the account\'s other working trial keys', async () => {
    const account = await seedAccount(api);
    const other = await seedAccount(api);
    const expiring = await seedGrant(api, account, 5);
    const active = await seedGrant(api, account, 5);
    const revokedGrant = await seedGrant(api, account, 5);
    const alsoExpired = await seedGrant(api, account, 5);
    const otherGrant = await seedGrant(api, other, 5);

    const expiredKey = await createKey(api, account, { type: 'trial', grant_id: expiring });
    const activeKey = await createKey(api, account, { type: 'trial', grant_id: active });
    const revokedKey = await createKey(api, account, { type: 'trial', grant_id: revokedGrant });
    const alsoExpiredKey = await createKey(api, account, { type: 'trial', grant_id: alsoExpired });
    await createKey(api, account, { type: 'paid' });
    await createKey(api, other, { type: 'trial', grant_id: otherGrant });
    await api.req('POST', `/api/keys/${revokedKey.id}/revoke`, { headers: account.auth });
    await expireGrant(api, expiring);
    await expireGrant(api, alsoExpired);

    const res = await api.req('GET', '/api/tasks', { headers: withKey(expiredKey) });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ message: 'This trial API key has expired.', active_key_prefixes: [activeKey.prefix] });

    const res2 = await api.req('GET', '/api/tasks', { headers: withKey(alsoExpiredKey) });
    expect(res2.body).toEqual({ message: 'This trial API key has expired.', active_key_prefixes: [activeKey.prefix] });
  });

  it('a cached trial key stops working the moment its grant expires', async () => {
    const account = await seedAccount(api);
    const grant = await seedGrant(api, account, 5, 1_500);
    const key = await createKey(api, account, { type: 'trial', grant_id: grant });
    expect((await api.req('GET', '/api/tasks', { headers: withKey(key) })).status).toBe(200);
    const res = await waitFor(
      async () => {
        const r = await api.req('GET', '/api/tasks', { headers: withKey(key) });
        return r.status === 401 ? r : undefined;
      },
      { timeoutMs: 5_000, what: 'the grant to expire' },
    );
    expect(res.body).toEqual({ message: 'This trial API key has expired.', active_key_prefixes: [] });
  });
});

describe('revocation across API replicas', () => {
  let a: TestApi;
  let b: TestApi;
  beforeAll(async () => {
    [a, b] = await Promise.all([startApi(), startApi()]);
  });
  afterAll(async () => {
    await Promise.all([a.close(), b.close()]);
  });

  it('a key revoked through one replica is refused by the other on the very next request', async () => {
    const account = await seedAccount(a);
    const key = await createKey(a, account, { type: 'paid' });
    // Both replicas have the key in their in-process caches.
    expect((await a.req('GET', '/api/tasks', { headers: withKey(key) })).status).toBe(200);
    expect((await b.req('GET', '/api/tasks', { headers: withKey(key) })).status).toBe(200);

    expect((await a.req('POST', `/api/keys/${key.id}/revoke`, { headers: account.auth })).status).toBe(200);
    const res = await b.req('GET', '/api/tasks', { headers: withKey(key) });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ message: 'Invalid API key.' });
  });

  it('pub/sub evicts the other replica\'s cached key (refused even once the marker is gone)', async () => {
    const account = await seedAccount(a);
    const key = await createKey(a, account, { type: 'paid' });
    expect((await b.req('GET', '/api/tasks', { headers: withKey(key) })).status).toBe(200);
    expect((await a.req('POST', `/api/keys/${key.id}/revoke`, { headers: account.auth })).status).toBe(200);
    // Without the marker only B's cache decides; a cache that missed the message would accept the
    // key for a minute, so within the deadline B must be refusing on its own.
    await a.deps.redis.del(revokedMarkerKey(account.id, key.id));
    const res = await waitFor(
      async () => {
        await a.deps.redis.del(revokedMarkerKey(account.id, key.id));
        const r = await b.req('GET', '/api/tasks', { headers: withKey(key) });
        return r.status === 401 ? r : undefined;
      },
      { timeoutMs: 3_000, what: 'replica B to drop the revoked key' },
    );
    expect(res.body).toEqual({ message: 'Invalid API key.' });
  });

  it('reissue kills the old key on every replica and the new key works everywhere', async () => {
    const account = await seedAccount(a);
    const key = await createKey(a, account, { type: 'paid' });
    expect((await b.req('GET', '/api/tasks', { headers: withKey(key) })).status).toBe(200);
    const reissued = await b.req('POST', `/api/keys/${key.id}/reissue`, { headers: account.auth });
    expect(reissued.status).toBe(201);
    expect((await a.req('GET', '/api/tasks', { headers: withKey(key) })).body).toEqual({ message: 'Invalid API key.' });
    expect((await b.req('GET', '/api/tasks', { headers: withKey(key) })).body).toEqual({ message: 'Invalid API key.' });
    for (const replica of [a, b]) {
      expect((await replica.req('GET', '/api/tasks', { headers: withKey(reissued.body.plaintext_key) })).status).toBe(200);
    }
  });
});
