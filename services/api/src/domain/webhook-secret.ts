import { decryptSecret, encryptSecret, generateWebhookSecret, webhookSecretContext } from '@taskapi/crypto';
import type { AccountRepository } from '../repositories/accounts';

export interface WebhookSecretView {
  webhook_secret: string;
  rotated_at: string;
}

export async function getWebhookSecret(accounts: AccountRepository, secretsKey: Buffer, accountId: string): Promise<WebhookSecretView> {
  const account = await accounts.webhookSecret(accountId);
  return {
    webhook_secret: decryptSecret(secretsKey, account.webhookSecretCiphertext, webhookSecretContext(accountId)),
    rotated_at: account.webhookSecretRotatedAt.toISOString(),
  };
}

/**
 * Replaces the secret. The dispatcher signs with the current secret at send time, so the old one
 * stops being used at once (no overlap period).
 */
export async function rotateWebhookSecret(accounts: AccountRepository, secretsKey: Buffer, accountId: string): Promise<WebhookSecretView> {
  const secret = generateWebhookSecret();
  const rotatedAt = await accounts.replaceWebhookSecret(accountId, encryptSecret(secretsKey, secret, webhookSecretContext(accountId)));
  return { webhook_secret: secret, rotated_at: rotatedAt.toISOString() };
}
