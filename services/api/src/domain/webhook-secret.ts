import type { PrismaClient } from '@taskapi/db';
import { decryptSecret, encryptSecret, generateWebhookSecret, webhookSecretContext } from '@taskapi/crypto';

export interface WebhookSecretView {
  webhook_secret: string;
  rotated_at: string;
}

export async function getWebhookSecret(prisma: PrismaClient, secretsKey: Buffer, accountId: string): Promise<WebhookSecretView> {
  const account = await prisma.account.findUniqueOrThrow({
    where: { id: accountId },
    select: { webhookSecretCiphertext: true, webhookSecretRotatedAt: true },
  });
  return {
    webhook_secret: decryptSecret(secretsKey, account.webhookSecretCiphertext, webhookSecretContext(accountId)),
    rotated_at: account.webhookSecretRotatedAt.toISOString(),
  };
}

/**
 * Replaces the secret. The dispatcher signs with the current secret at send time, so the old one
 * stops being used at once (no overlap period).
 */
export async function rotateWebhookSecret(prisma: PrismaClient, secretsKey: Buffer, accountId: string): Promise<WebhookSecretView> {
  const secret = generateWebhookSecret();
  const account = await prisma.account.update({
    where: { id: accountId },
    data: { webhookSecretCiphertext: encryptSecret(secretsKey, secret, webhookSecretContext(accountId)), webhookSecretRotatedAt: new Date() },
    select: { webhookSecretRotatedAt: true },
  });
  return { webhook_secret: secret, rotated_at: account.webhookSecretRotatedAt.toISOString() };
}
