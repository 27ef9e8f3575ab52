import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class SecretDecryptionError extends Error {
  override name = 'SecretDecryptionError';
}

/**
 * AES-256-GCM encryption of a secret at rest. `context` (e.g. the row id) is bound as associated
 * data, so a ciphertext copied onto another row does not decrypt.
 * Output: `v1.<base64url(iv | tag | ciphertext)>`.
 */
export function encryptSecret(key: Buffer, plaintext: string, context: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(context));
  const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
  return `${VERSION}.${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
}

/** Reverses `encryptSecret`; throws `SecretDecryptionError` on a wrong key, context or tampering. */
export function decryptSecret(key: Buffer, sealed: string, context: string): string {
  const [version, data] = sealed.split('.', 2);
  if (version !== VERSION || !data) throw new SecretDecryptionError('Unknown secret format');
  const raw = Buffer.from(data, 'base64url');
  if (raw.length < IV_BYTES + TAG_BYTES) throw new SecretDecryptionError('Truncated secret');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(context));
    decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    throw new SecretDecryptionError('Secret could not be decrypted (wrong SECRETS_KEY or tampered data)');
  }
}
