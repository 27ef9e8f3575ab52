import { standardWebhookSignature, webhookSignature } from '@taskapi/crypto';
import { isId } from '@taskapi/ids';
import { startHttpsReceiver, testCa, type HttpsReceiver } from '@taskapi/testing';
import { createKey, seedAccount, startApi, withKey, type TestAccount, type TestApi } from './support/harness';

// Test webhooks go to a real local HTTPS receiver whose certificate the API trusts through the test
// CA (the way the dispatcher is given it), with private networks allowed as on a local stack; a
// second API keeps the production default (private networks refused).
describe('POST /api/webhook-deliveries/test', () => {
  let api: TestApi;
  let strictApi: TestApi;
  let receiver: HttpsReceiver;
  let account: TestAccount;

  beforeAll(async () => {
    receiver = await startHttpsReceiver((req) => {
      if (req.path === '/big') return { status: 200, body: 'a' + 'é'.repeat(1500) };
      if (req.path === '/redirect') return { status: 302, headers: { location: '/elsewhere' } };
      if (req.path === '/broken') return { status: 500, body: 'boom' };
      return { status: 200, body: 'ok\u0000thanks' };
    });
    api = await startApi({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'true' }, { egressCa: testCa().caCert });
    strictApi = await startApi({ WEBHOOK_ALLOW_PRIVATE_NETWORKS: 'false' }, { egressCa: testCa().caCert });
    account = await seedAccount(api);
  });
  afterAll(async () => {
    await Promise.all([api?.close(), strictApi?.close(), receiver?.close()]);
  });

  const send = (target: TestApi, who: TestAccount, body: unknown) => target.req('POST', '/api/webhook-deliveries/test', { headers: who.auth, body });

  it('sends a signed sample webhook shaped like a real one and shows status, latency and excerpt', async () => {
    const secret = (await api.req('GET', '/api/webhook-secret', { headers: account.auth })).body.webhook_secret as string;
    const res = await send(api, account, { url: receiver.url('/hook') });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ public_id: expect.stringMatching(/^task_test/), status_code: 200, duration_ms: expect.any(Number), error: null, response_excerpt: 'ok\uFFFDthanks' });
    // The sample id has the shape of a real one, so receivers' id parsers accept it.
    expect(isId('task', res.body.public_id)).toBe(true);

    const [got] = await receiver.waitForCount('/hook', 1);
    const body = got!.body.toString('utf8');
    expect(JSON.parse(body)).toEqual({ public_id: res.body.public_id, status: 20, error_code: null, payload: { test: true } });
    expect(got!.headers['x-signature']).toBe(webhookSignature(secret, body));
    const id = got!.headers['webhook-id'] as string;
    expect(isId('delivery', id)).toBe(true);
    expect(id.startsWith('whd_test')).toBe(true);
    expect(got!.headers['webhook-signature']).toBe(standardWebhookSignature(secret, id, Number(got!.headers['webhook-timestamp']), body));
    expect(got!.headers['x-timestamp']).toBe(got!.headers['webhook-timestamp']);
    expect(got!.headers['user-agent']).toBe('TaskAPI-Webhooks/1.0');
  });

  it('adds result for a kind whose webhook carries it', async () => {
    const res = await send(api, account, { url: receiver.url('/faces'), kind: 'face-detection' });
    expect(res.status).toBe(200);
    const [got] = await receiver.waitForCount('/faces', 1);
    expect(JSON.parse(got!.body.toString('utf8'))).toEqual({ public_id: res.body.public_id, status: 20, error_code: null, payload: { test: true }, result: { face_coordinates: [] } });
  });

  it('caps the excerpt at 1 KB without cutting a character in half', async () => {
    const res = await send(api, account, { url: receiver.url('/big') });
    expect(res.body.status_code).toBe(200);
    expect(Buffer.byteLength(res.body.response_excerpt, 'utf8')).toBeLessThanOrEqual(1024);
    expect(res.body.response_excerpt).toBe('a' + 'é'.repeat(511));
  });

  it('reports a non-2xx answer as an error, and does not follow redirects', async () => {
    const broken = await send(api, account, { url: receiver.url('/broken') });
    expect(broken.body).toMatchObject({ status_code: 500, error: 'HTTP 500', response_excerpt: 'boom' });
    const redirected = await send(api, account, { url: receiver.url('/redirect') });
    expect(redirected.status).toBe(200);
    expect(redirected.body).toMatchObject({ status_code: 302, error: 'HTTP 302' });
    expect(receiver.at('/elsewhere')).toHaveLength(0);
  });

  it('refuses a private destination when private networks are not allowed (200 with error, nothing sent)', async () => {
    const other = await seedAccount(strictApi);
    const before = receiver.received.length;
    for (const url of [receiver.url('/private'), receiver.url('/private').replace('localhost', '127.0.0.1')]) {
      const res = await send(strictApi, other, { url });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ status_code: null, response_excerpt: null, error: expect.stringMatching(/private|not allowed|blocked|loopback/i) });
    }
    expect(receiver.received.length).toBe(before);
  });

  it('validates the URL like callback_url', async () => {
    for (const url of ['http://example.com/hook', 'not a url', 42]) {
      const res = await send(api, account, { url });
      expect(res.status).toBe(400);
      expect(res.body.message).toMatch(/url/);
    }
    const res = await send(api, account, { url: receiver.url('/hook'), kind: 'nope' });
    expect(res.status).toBe(400);
  });

  it('is rate limited per account: the 11th test in a minute is a 429 with Retry-After', async () => {
    const limited = await seedAccount(strictApi);
    const url = 'https://127.0.0.1:9/refused';
    for (let i = 0; i < 10; i++) expect((await send(strictApi, limited, { url })).status).toBe(200);
    const res = await send(strictApi, limited, { url });
    expect(res.status).toBe(429);
    expect(res.body).toMatchObject({ message: 'Rate limit exceeded.', limit: 10, window: 'minute', retry_after: expect.any(Number) });
    const retryAfter = Number(res.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    // Another account is not affected.
    const fresh = await seedAccount(strictApi);
    expect((await send(strictApi, fresh, { url })).status).toBe(200);
  });

  it('is for login sessions only: an API key is refused', async () => {
    const key = await createKey(api, account, { type: 'paid' });
    const res = await api.req('POST', '/api/webhook-deliveries/test', { headers: withKey(key), body: { url: receiver.url('/hook') } });
    expect(res.status).toBe(401);
    expect(res.body.message).toBe('This endpoint requires a login session. API keys are not accepted.');
  });
});
