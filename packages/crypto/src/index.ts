export { sha256Hex, hmacSha256Hex, safeEqual } from './digest';
export { randomBase62 } from './random';
export { encryptSecret, decryptSecret, SecretDecryptionError } from './secret-box';
export { hashPassword, verifyPassword } from './password';
export { generateApiKey, parseApiKey, API_KEY_PREFIXES, API_KEY_BODY_LENGTH } from './api-key';
export type { ApiKeyType, GeneratedApiKey, ParsedApiKey } from './api-key';
export { generateWebhookSecret, webhookSecretContext, webhookSignature, webhookSigningKeys, standardWebhookSignature } from './webhook-secret';
export type { WebhookSigningKeys } from './webhook-secret';
export { ModelWebhookTokens } from './model-webhook';
