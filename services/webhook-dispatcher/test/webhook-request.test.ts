// The signed request of one attempt: the body's exact bytes, `X-Signature` (hex HMAC-SHA256 of the
// body keyed with the whole `whsec_` secret), `X-Timestamp`, the Standard Webhooks headers (checked
// with the standardwebhooks library, as a receiver would) and `X-Webhook-Attempt`. The last tests
// build it from a delivery as PostgreSQL stores it, with the account's encrypted secret, in a
// database of this file's own.
import { createHmac, randomBytes } from 'node:crypto';
import pg from 'pg';
import { Webhook } from 'standardwebhooks';
import { encryptSecret, webhookSecretContext, webhookSigningKeys } from '@taskapi/crypto';
import { recreateDatabase, testDatabaseUrl } from '@taskapi/testing';
import { claimAndLoad, loadDelivery } from '../src/repositories/deliveries';
import { webhookBody, webhookRequest } from '../src/domain/webhook-request';
import type { ClaimedDelivery } from '../src/repositories/deliveries';
import { createSecretCache } from '../src/infra/secret-cache';
import { seedAccount, seedDelivery } from './support/deliveries';

const SECRET = `whsec_${Buffer.alloc(32, 0x5a).toString('base64')}`;
const NOW = new Date('2026-01-02T03:04:05.678Z');
const NOW_SECONDS = '1767323045';

const completed: ClaimedDelivery = {
  id: 'whd_request1',
  url: 'https://receiver.example.test/hooks?source=taskapi',
  task_status: 20,
  public_id: 'task_request1',
  kind: 'image-generation',
  error_code: null,
  payload: '{"order":  "A-17", "n": 1.50}',
  result: '{"images":["x.png"]}',
  trace_parent: null,
};

/** X-Signature as the spec defines it, computed here independently of the dispatcher. */
const specSignature = (secret: string, body: string) => createHmac('sha256', secret).update(body, 'utf8').digest('hex');

describe('the body', () => {
  it('is the task outcome with the payload exactly as stored (spacing, number lexemes)', () => {
    expect(webhookBody(completed)).toBe('{"public_id":"task_request1","status":20,"error_code":null,"payload":{"order":  "A-17", "n": 1.50}}');
  });

  it('carries the error code of a failed task, and null for a task without payload', () => {
    expect(webhookBody({ ...completed, task_status: 30, error_code: 'engine_error', payload: null, result: null })).toBe(
      '{"public_id":"task_request1","status":30,"error_code":"engine_error","payload":null}',
    );
  });

  it('has the result for the kinds whose webhook carries it: as stored when completed, null when failed', () => {
    const faces = { ...completed, kind: 'face-detection', result: '{"face_coordinates": [{"x": 1}]}' };
    expect(webhookBody(faces)).toBe(
      '{"public_id":"task_request1","status":20,"error_code":null,"payload":{"order":  "A-17", "n": 1.50},"result":{"face_coordinates": [{"x": 1}]}}',
    );
    expect(webhookBody({ ...faces, task_status: 30, error_code: 'no_image' })).toBe(
      '{"public_id":"task_request1","status":30,"error_code":"no_image","payload":{"order":  "A-17", "n": 1.50},"result":null}',
    );
  });
});

describe('the request of one attempt', () => {
  const request = webhookRequest(completed, webhookSigningKeys(SECRET), 3, NOW);

  it('goes to the delivery URL with the body bytes it was signed over', () => {
    expect(request.url).toBe('https://receiver.example.test/hooks?source=taskapi');
    expect(request.body).toBe(webhookBody(completed));
  });

  it('is signed: X-Signature over the exact body, X-Timestamp in seconds, the attempt number', () => {
    expect(request.headers).toMatchObject({
      'content-type': 'application/json',
      'x-signature': specSignature(SECRET, request.body),
      'x-timestamp': NOW_SECONDS,
      'x-webhook-attempt': '3',
    });
    expect(request.headers['x-signature']).toMatch(/^[0-9a-f]{64}$/);
  });

  it('carries the Standard Webhooks headers: the delivery id, the timestamp and a v1 signature', () => {
    expect(request.headers).toMatchObject({
      'webhook-id': 'whd_request1',
      'webhook-timestamp': NOW_SECONDS,
      'webhook-signature': new Webhook(SECRET).sign('whd_request1', NOW, request.body),
    });
  });

  it('keeps the body and webhook-id across attempts; only the attempt number and the time move', () => {
    const later = new Date(NOW.getTime() + 60_000);
    const retry = webhookRequest(completed, webhookSigningKeys(SECRET), 4, later);
    expect(retry.body).toBe(request.body);
    expect(retry.headers['webhook-id']).toBe(request.headers['webhook-id']);
    expect(retry.headers['x-webhook-attempt']).toBe('4');
    expect(retry.headers['x-timestamp']).toBe(String(Number(NOW_SECONDS) + 60));
    expect(retry.headers['webhook-signature']).not.toBe(request.headers['webhook-signature']);
  });

  it('does not verify under another secret', () => {
    const other = `whsec_${Buffer.alloc(32, 0x11).toString('base64')}`;
    expect(request.headers['x-signature']).not.toBe(specSignature(other, request.body));
    expect(request.headers['webhook-signature']).not.toBe(new Webhook(other).sign('whd_request1', NOW, request.body));
  });
});

describe('the request built from a stored delivery and the account\'s encrypted secret', () => {
  const DATABASE_URL = testDatabaseUrl('dispatcher_request');
  const secretsKey = randomBytes(32);
  let pool: pg.Pool;

  beforeAll(async () => {
    await recreateDatabase(DATABASE_URL);
    pool = new pg.Pool({ connectionString: DATABASE_URL, max: 2 });
  }, 60_000);

  afterAll(async () => {
    await pool?.end();
  });

  /** An account whose secret is SECRET, encrypted at rest, and one delivery of its face-detection task. */
  async function seed() {
    const accountId = await seedAccount(pool);
    const ciphertext = encryptSecret(secretsKey, SECRET, webhookSecretContext(accountId));
    await pool.query('UPDATE accounts SET webhook_secret_ciphertext = $2 WHERE id = $1', [accountId, ciphertext]);
    const { deliveryId, publicId } = await seedDelivery(pool, accountId, {
      kind: 'face-detection',
      payload: '{ "b": 2,\n  "a": [1e3, "é"] }',
      result: '{"face_coordinates":[]}',
    });
    return { accountId, ciphertext, deliveryId, publicId };
  }

  it('sends the stored JSON byte for byte, signed with the decrypted secret (both paths alike)', async () => {
    const { accountId, ciphertext, deliveryId, publicId } = await seed();
    const secrets = createSecretCache();
    const loaded = await loadDelivery(pool, deliveryId);
    expect(loaded).not.toBeNull();
    const keys = secrets.decrypt(secretsKey, loaded!.account_id, loaded!.webhook_secret_ciphertext);
    const request = webhookRequest(loaded!, keys, 1, NOW);

    expect(request.body).toBe(`{"public_id":"${publicId}","status":20,"error_code":null,"payload":{ "b": 2,\n  "a": [1e3, "é"] },"result":{"face_coordinates":[]}}`);
    expect(request.headers['x-signature']).toBe(specSignature(SECRET, request.body));
    expect(request.headers['webhook-signature']).toBe(new Webhook(SECRET).sign(deliveryId, NOW, request.body));

    // The fast path (claim and load in one statement, the secret already decrypted) builds the same request.
    const claimed = await claimAndLoad(pool, { deliveryId, attempt: 1, accountId, ciphertext, startedAt: NOW });
    expect(claimed).not.toBeNull();
    expect(webhookRequest(claimed!, secrets.known(accountId)!.keys, 1, NOW)).toEqual(request);
  });

  it('a secret that does not decrypt (another key, another account) fails before any request is built', async () => {
    const { deliveryId } = await seed();
    const loaded = await loadDelivery(pool, deliveryId);
    expect(() => createSecretCache().decrypt(randomBytes(32), loaded!.account_id, loaded!.webhook_secret_ciphertext)).toThrow();
    expect(() => createSecretCache().decrypt(secretsKey, 'acct_someone_else', loaded!.webhook_secret_ciphertext)).toThrow();
  });
});
