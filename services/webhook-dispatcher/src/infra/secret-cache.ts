import { decryptSecret, webhookSecretContext, webhookSigningKeys, type WebhookSigningKeys } from '@taskapi/crypto';

/** Accounts whose decrypted webhook secret a dispatcher keeps (least recently used goes first). */
const MAX_ACCOUNTS = 1_000;

/**
 * Decrypted webhook secrets by account, as signing keys, each with the ciphertext it came from: a
 * rotation changes the ciphertext, so a secret is only ever reused for the exact ciphertext it was
 * decrypted from. Saves the decryption and the key setup per delivery, and lets the dispatcher
 * claim an attempt in the statement that loads it (it knows beforehand that the account's current
 * secret decrypts). The keys stay in this process's memory only, as each secret already did for
 * the length of a delivery.
 */
export interface SecretCache {
  /** The entry of an account, if this process decrypted its secret lately. */
  known(accountId: string): { ciphertext: string; keys: WebhookSigningKeys } | undefined;
  /** The signing keys of `ciphertext` (decrypted now unless cached); throws when it cannot be decrypted. */
  decrypt(key: Buffer, accountId: string, ciphertext: string): WebhookSigningKeys;
}

export function createSecretCache(maxAccounts = MAX_ACCOUNTS): SecretCache {
  const entries = new Map<string, { ciphertext: string; keys: WebhookSigningKeys }>();
  return {
    known(accountId) {
      const entry = entries.get(accountId);
      if (entry) {
        // Map order is insertion order: re-inserting marks it most recently used.
        entries.delete(accountId);
        entries.set(accountId, entry);
      }
      return entry;
    },
    decrypt(key, accountId, ciphertext) {
      const entry = entries.get(accountId);
      if (entry?.ciphertext === ciphertext) return entry.keys;
      const keys = webhookSigningKeys(decryptSecret(key, ciphertext, webhookSecretContext(accountId)));
      entries.delete(accountId);
      entries.set(accountId, { ciphertext, keys });
      if (entries.size > maxAccounts) entries.delete(entries.keys().next().value as string);
      return keys;
    },
  };
}
