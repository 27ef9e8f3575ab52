import { createHmac, randomBytes } from 'node:crypto';

/** A Standard Webhooks secret: `whsec_` + base64 of 32 random bytes. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/** Associated data binding an account's encrypted webhook secret to that account. */
export function webhookSecretContext(accountId: string): string {
  return `webhook-secret:${accountId}`;
}

/** `X-Signature` (spec): lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the whole `whsec_…` string. */
export function webhookSignature(secret: string, body: string | Buffer): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/**
 * `webhook-signature` per Standard Webhooks: `v1,` + base64 HMAC-SHA256 of `<id>.<timestamp>.<body>`,
 * keyed with the base64-decoded part of the secret after `whsec_`.
 */
export function standardWebhookSignature(secret: string, id: string, timestamp: number, body: string | Buffer): string {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const mac = createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
  return `v1,${mac}`;
}
