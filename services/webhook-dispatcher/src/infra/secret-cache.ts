import { decryptSecret, webhookSecretContext } from '@taskapi/crypto';

/** Accounts whose decrypted webhook secret a dispatcher keeps (least recently used goes first). */
const MAX_ACCOUNTS = 1_000;

/**
 * Decrypted webhook secrets by account, each with the ciphertext it came from: a rotation changes
 * the ciphertext, so a secret is only ever reused for the exact ciphertext it was decrypted from.
 * Saves the decryption per delivery, and lets the dispatcher claim an attempt in the statement that
 * loads it (it knows beforehand that the account's current secret decrypts). The plaintexts stay in
 * this process's memory only, as each one already did for the length of a delivery.
 */
export interface SecretCache {
  /** The entry of an account, if this process decrypted its secret lately. */
  known(accountId: string): { ciphertext: string; secret: string } | undefined;
  /** The plaintext of `ciphertext` (decrypted now unless cached); throws when it cannot be decrypted. */
  decrypt(key: Buffer, accountId: string, ciphertext: string): string;
}

export function createSecretCache(maxAccounts = MAX_ACCOUNTS): SecretCache {
  const entries = new Map<string, { ciphertext: string; secret: string }>();
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
      if (entry?.ciphertext === ciphertext) return entry.secret;
      const secret = decryptSecret(key, ciphertext, webhookSecretContext(accountId));
      entries.delete(accountId);
      entries.set(accountId, { ciphertext, secret });
      if (entries.size > maxAccounts) entries.delete(entries.keys().next().value as string);
      return secret;
    },
  };
}
