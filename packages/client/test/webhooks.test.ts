// verifyWebhook against requests signed by the dispatcher's own code (packages/domain
// webhook-request.ts), in every header and body shape integrators' frameworks hand over.
import { generateWebhookSecret } from '@taskapi/crypto';
import { webhookBody, webhookHeaders } from '@taskapi/domain';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook, WebhookVerificationError } from '../src';

const secret = generateWebhookSecret();
const body = webhookBody({ public_id: 'task_3kT9xQ2mLp7Vn4Rb8Yc1Zd', task_status: 20, kind: 'image-generation', error_code: null, payload: '{"order":"A-1","n":1.0}', result: null });
const signed = (opts: { now?: Date; text?: string; key?: string } = {}) =>
  webhookHeaders({ deliveryId: 'whd_abc123', attempt: 1, secret: opts.key ?? secret, body: opts.text ?? body, now: opts.now ?? new Date() });

async function refusal(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WebhookVerificationError);
  return (err as Error).message;
}

describe('verifyWebhook', () => {
  it('accepts a real delivery and returns the body, payload as sent', async () => {
    const event = await verifyWebhook(Buffer.from(body), signed(), secret);
    expect(event).toEqual({ public_id: 'task_3kT9xQ2mLp7Vn4Rb8Yc1Zd', status: 20, error_code: null, payload: { order: 'A-1', n: 1 } });
  });

  it('takes the body as string, Uint8Array or ArrayBuffer and headers as Headers, any-case object or Node headers', async () => {
    const headers = signed();
    const upper = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toUpperCase(), v]));
    const nodeStyle = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, k === 'webhook-signature' ? [v] : v]));
    const bytes = new TextEncoder().encode(body);
    for (const raw of [body, bytes, bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)]) {
      for (const h of [headers, upper, nodeStyle, new Headers(headers)]) {
        await expect(verifyWebhook(raw as string, h, secret)).resolves.toMatchObject({ status: 20 });
      }
    }
  });

  it('only X-Signature (no Standard Webhooks headers) is enough by default, but proves nothing about age', async () => {
    const { 'x-signature': sig, 'x-timestamp': ts } = signed();
    await expect(verifyWebhook(body, { 'x-signature': sig!, 'x-timestamp': ts! }, secret)).resolves.toMatchObject({ status: 20 });
    // An hour-old delivery replayed without its Standard Webhooks headers: X-Timestamp is not signed,
    // so it is not consulted either way (a replay would just send a fresh one).
    const old = signed({ now: new Date(Date.now() - 3600_000) });
    await expect(verifyWebhook(body, { 'x-signature': old['x-signature']!, 'x-timestamp': old['x-timestamp']! }, secret)).resolves.toBeDefined();
    await expect(verifyWebhook(body, { 'x-signature': old['x-signature']!, 'x-timestamp': String(Math.floor(Date.now() / 1000)) }, secret)).resolves.toBeDefined();
  });

  it('requireStandardWebhooks: refuses a request without them (a replay with a fresh X-Timestamp), accepts a real delivery', async () => {
    const old = signed({ now: new Date(Date.now() - 3600_000) });
    const replay = { 'x-signature': old['x-signature']!, 'x-timestamp': String(Math.floor(Date.now() / 1000)) };
    expect(await refusal(verifyWebhook(body, replay, secret, { requireStandardWebhooks: true }))).toBe(
      'Missing Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature).',
    );
    expect(await refusal(verifyWebhook(body, old, secret, { requireStandardWebhooks: true }))).toMatch(/outside the tolerance/);
    await expect(verifyWebhook(body, signed(), secret, { requireStandardWebhooks: true })).resolves.toMatchObject({ status: 20 });
  });

  it('agrees with the standardwebhooks package', async () => {
    const headers = signed();
    expect(() => new Webhook(secret).verify(body, headers)).not.toThrow();
    await expect(verifyWebhook(body, headers, secret)).resolves.toBeDefined();
  });

  it('refuses an altered body, even by one byte', async () => {
    expect(await refusal(verifyWebhook(body.replace('A-1', 'A-2'), signed(), secret))).toBe('X-Signature does not match the body.');
    expect(await refusal(verifyWebhook(`${body} `, signed(), secret))).toBe('X-Signature does not match the body.');
  });

  it('refuses a wrong or missing X-Signature, and another secret', async () => {
    const headers = signed();
    const flipped = headers['x-signature']!.replace(/^./, (c) => (c === '0' ? '1' : '0'));
    expect(await refusal(verifyWebhook(body, { ...headers, 'x-signature': flipped }, secret))).toBe('X-Signature does not match the body.');
    expect(await refusal(verifyWebhook(body, { ...headers, 'x-signature': 'nothex' }, secret))).toBe('X-Signature does not match the body.');
    const { 'x-signature': _gone, ...without } = headers;
    expect(await refusal(verifyWebhook(body, without, secret))).toBe('Missing X-Signature header.');
    expect(await refusal(verifyWebhook(body, headers, generateWebhookSecret()))).toBe('X-Signature does not match the body.');
  });

  it('refuses a Standard Webhooks signature that does not match, or a partial set of its headers', async () => {
    const headers = signed();
    // A valid X-Signature, but webhook-signature from another secret (or for another webhook-id).
    const other = signed({ key: generateWebhookSecret() });
    expect(await refusal(verifyWebhook(body, { ...headers, 'webhook-signature': other['webhook-signature']! }, secret))).toBe('webhook-signature does not match the body.');
    expect(await refusal(verifyWebhook(body, { ...headers, 'webhook-id': 'whd_other' }, secret))).toBe('webhook-signature does not match the body.');
    const { 'webhook-signature': _gone, ...partial } = headers;
    expect(await refusal(verifyWebhook(body, partial, secret))).toMatch(/^Incomplete Standard Webhooks headers/);
    // One of several space-separated signatures (a rotation) is enough.
    await expect(verifyWebhook(body, { ...headers, 'webhook-signature': `v1,AAAA ${headers['webhook-signature']}` }, secret)).resolves.toBeDefined();
  });

  it('refuses an old timestamp (default tolerance 300 s); the tolerance is configurable', async () => {
    const old = signed({ now: new Date(Date.now() - 10 * 60_000) });
    expect(await refusal(verifyWebhook(body, old, secret))).toBe('Webhook timestamp is outside the tolerance (a replay or a wrong clock).');
    await expect(verifyWebhook(body, old, secret, { toleranceSeconds: 3600 })).resolves.toBeDefined();
    await expect(verifyWebhook(body, old, secret, { toleranceSeconds: Infinity })).resolves.toBeDefined();
    // The signed webhook-timestamp is the one checked: a fresh X-Timestamp does not help.
    expect(await refusal(verifyWebhook(body, { ...old, 'x-timestamp': String(Math.floor(Date.now() / 1000)) }, secret))).toMatch(/outside the tolerance/);
  });

  it('refuses a parsed body (the exact bytes are needed) and a body that is not JSON', async () => {
    expect(await refusal(verifyWebhook(JSON.parse(body) as string, signed(), secret))).toMatch(/^The raw body must be the exact bytes received/);
    expect(await refusal(verifyWebhook('not json', signed({ text: 'not json' }), secret))).toBe('Webhook body is not JSON.');
  });
});
