import { startTcpRelay, TEST_DATABASE_URL, waitFor, type TcpRelay } from '@taskapi/testing';
import { createKey, seedAccount, startApi, withKey, type TestApi } from './support/harness';

describe('PostgreSQL outage', () => {
  let relay: TcpRelay;
  let api: TestApi;
  beforeAll(async () => {
    const target = new URL(TEST_DATABASE_URL);
    relay = await startTcpRelay(target.hostname, Number(target.port || 5432));
    const viaRelay = new URL(TEST_DATABASE_URL);
    viaRelay.hostname = '127.0.0.1';
    viaRelay.port = String(relay.port);
    api = await startApi({ DATABASE_URL: viaRelay.toString() });
  });
  afterAll(async () => {
    await api.close();
    await relay.close();
  });

  it('answers 503 (never 500) while the database is unreachable, and recovers', async () => {
    const account = await seedAccount(api, { credits: 10 });
    const cached = await createKey(api, account, { type: 'paid' });
    const fresh = await createKey(api, account, { type: 'paid' });
    expect((await api.req('GET', '/api/tasks', { headers: withKey(cached) })).status).toBe(200);

    relay.cut();
    const outage = [
      api.req('GET', '/api/tasks', { headers: withKey(cached) }),
      api.req('GET', '/api/tasks', { headers: withKey(fresh) }),
      api.req('POST', '/api/tasks/image-generation', { headers: withKey(cached), body: { prompt: 'p' } }),
      api.req('GET', '/api/keys', { headers: account.auth }),
      api.req('POST', '/api/auth/login', { body: { email: account.email, password: account.password } }),
    ];
    for (const res of await Promise.all(outage)) {
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ message: 'Service temporarily unavailable. Please retry shortly.' });
    }
    const ready = await api.req('GET', '/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual({ status: 'not_ready', checks: { database: 'unavailable', redis: 'ok', storage: 'ok' } });

    relay.restore();
    await waitFor(async () => (await api.req('GET', '/api/tasks', { headers: withKey(fresh) })).status === 200, {
      timeoutMs: 15_000,
      what: 'recovery after the database returns',
    });
    expect((await api.req('POST', '/api/tasks/image-generation', { headers: withKey(cached), body: { prompt: 'p' } })).status).toBe(201);
  });

  it('a stopped server (connections refused) is 503 on the Prisma-backed console endpoints too', async () => {
    const account = await seedAccount(api, { credits: 10 });
    relay.cut('refuse');
    try {
      const outage = await Promise.all([
        api.req('POST', '/api/auth/login', { body: { email: account.email, password: account.password } }),
        api.req('GET', '/api/auth/session', { headers: account.auth }),
        api.req('GET', '/api/credits/balance', { headers: account.auth }),
        api.req('GET', '/api/trial-grants', { headers: account.auth }),
        api.req('GET', '/api/keys', { headers: account.auth }),
      ]);
      for (const res of outage) {
        expect({ status: res.status, body: res.body }).toEqual({ status: 503, body: { message: 'Service temporarily unavailable. Please retry shortly.' } });
      }
    } finally {
      relay.restore();
    }
    await waitFor(async () => (await api.req('GET', '/api/credits/balance', { headers: account.auth })).status === 200, {
      timeoutMs: 15_000,
      what: 'recovery after the database listens again',
    });
  });
});
