import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';

/** A Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** Associated data binding an account's encrypted webhook secret to that account. */
export function webhookSecretContext(accountId: string): string {
  return `webhook-secret:${accountId}`;
}

/**
 * An account's webhook secret made ready to sign with: the HMAC key of each signature, made once.
 * A dispatcher signs many attempts with one secret; turning the secret into a key (and decoding
 * its base64 part) for every signature cost more than the signature.
 */
export interface WebhookSigningKeys {
  /** `X-Signature`'s key: the whole `whsec_…` string. */
  spec: KeyObject;
  /** `webhook-signature`'s key: the base64-decoded part after `whsec_`. */
  standard: KeyObject;
}

/** The Standard Webhooks key bytes of a secret: the base64-decoded part after `whsec_`. */
const standardKeyBytes = (secret: string) => Buffer.from(secret.replace(/^whsec_/, ''), 'base64');

export function webhookSigningKeys(secret: string): WebhookSigningKeys {
  return { spec: createSecretKey(Buffer.from(secret, 'utf8')), standard: createSecretKey(standardKeyBytes(secret)) };
}

/** `X-Signature` (spec): lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the whole `whsec_…` string. */
export function webhookSignature(secret: string | WebhookSigningKeys, body: string | Buffer): string {
  return createHmac('sha256', typeof secret === 'string' ? secret : secret.spec)
    .update(body)
    .digest('hex');
}

/**
 * `webhook-signature` per Standard Webhooks: `v1,` + base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`,
 * keyed with the base64-decoded part of the secret after `whsec_`.
 */
export function standardWebhookSignature(secret: string | WebhookSigningKeys, id: string, timestamp: number, body: string | Buffer): string {
  const key = typeof secret === 'string' ? standardKeyBytes(secret) : secret.standard;
  const mac = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
  return `v1,${mac}`;
}
