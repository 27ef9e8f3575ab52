import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/** What a read token says: this key lets its bearer read this task until then. */
export interface ReadTokenClaim {
  /** The minting API key's id (its revocation ends the token at the next request). */
  keyId: string;
  /** The one task it reads. */
  publicId: string;
  /** Expiry, Unix seconds. */
  expiresAt: number;
}

/** Every read token starts with this (so logs can recognise and scrub one). */
export const READ_TOKEN_PREFIX = 'trt_';

const IV_BYTES = 12;
const TAG_BYTES = 16;
const AAD = Buffer.from('taskapi read token v1');
// The claim is three short fields; anything far longer is not a token of ours (no decryption tried).
const MAX_TOKEN_LENGTH = 400;
const TOKEN_SHAPE = /^trt_[A-Za-z0-9_-]+$/;
/** Opened tokens kept per process (about 300 bytes each). */
const OPENED_MAX = 10_000;

/**
 * Browser read tokens (docs/architecture.md, "Browser read tokens"): a claim sealed with
 * AES-256-GCM under a key of its own derived from SECRETS_KEY. Sealed rather than only signed, so a
 * token shows nothing (not the key's id, the task or its expiry) to whoever holds it; checked by
 * any replica with no lookup (a forged or altered token fails its tag before anything else runs).
 * URL-safe: `trt_` + base64url(iv | tag | ciphertext).
 */
export class ReadTokens {
  private readonly key: Buffer;
  /**
   * Tokens opened lately, by their text: a page reads one task many times with one token (its
   * event stream reconnecting, a poll), and opening costs a cipher's setup each time. Only real
   * tokens are kept (a forgery is not), so a flood of forgeries cannot fill it; the oldest goes first.
   */
  private readonly opened = new Map<string, ReadTokenClaim>();

  constructor(secretsKey: Buffer) {
    this.key = Buffer.from(hkdfSync('sha256', secretsKey, Buffer.alloc(0), 'taskapi read token v1', 32));
  }

  seal(claim: ReadTokenClaim): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(AAD);
    const body = Buffer.concat([cipher.update(JSON.stringify([claim.keyId, claim.publicId, claim.expiresAt]), 'utf8'), cipher.final()]);
    return `${READ_TOKEN_PREFIX}${Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')}`;
  }

  /** The claim of a token this process (or any with the same SECRETS_KEY) sealed; null for anything else. */
  open(token: string): ReadTokenClaim | null {
    const known = this.opened.get(token);
    if (known) return known;
    const claim = this.unseal(token);
    if (claim) {
      if (this.opened.size >= OPENED_MAX) this.opened.delete(this.opened.keys().next().value as string);
      this.opened.set(token, claim);
    }
    return claim;
  }

  private unseal(token: string): ReadTokenClaim | null {
    if (token.length > MAX_TOKEN_LENGTH || !TOKEN_SHAPE.test(token)) return null;
    const body = token.slice(READ_TOKEN_PREFIX.length);
    const raw = Buffer.from(body, 'base64url');
    // Only the one spelling seal() writes: base64url decoding ignores stray trailing characters.
    if (raw.length <= IV_BYTES + TAG_BYTES || raw.toString('base64url') !== body) return null;
    let fields: unknown;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, IV_BYTES));
      decipher.setAAD(AAD);
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      fields = JSON.parse(Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8'));
    } catch {
      return null;
    }
    if (!Array.isArray(fields) || fields.length !== 3) return null;
    const [keyId, publicId, expiresAt] = fields as unknown[];
    if (typeof keyId !== 'string' || typeof publicId !== 'string' || typeof expiresAt !== 'number' || !Number.isInteger(expiresAt)) return null;
    // Shared by every request that presents this token: nobody may change it.
    return Object.freeze({ keyId, publicId, expiresAt });
  }
}
