import { randomBytes } from 'node:crypto';
import {
  decryptSecret,
  encryptSecret,
  generateApiKey,
  generateWebhookSecret,
  hashPassword,
  hmacSha256Hex,
  parseApiKey,
  randomBase62,
  ReadTokens,
  safeEqual,
  sha256Hex,
  verifyPassword,
} from '../src';

describe('secret box (AES-256-GCM)', () => {
  const key = randomBytes(32);

  it('round-trips and never produces the same ciphertext twice', () => {
    const a = encryptSecret(key, 'sk-live-secret', 'api-key:key_1');
    const b = encryptSecret(key, 'sk-live-secret', 'api-key:key_1');
    expect(a).not.toBe(b);
    expect(a).not.toContain('secret');
    expect(decryptSecret(key, a, 'api-key:key_1')).toBe('sk-live-secret');
  });

  it('refuses the wrong key, the wrong row and any tampering', () => {
    const sealed = encryptSecret(key, 'value', 'ctx');
    expect(() => decryptSecret(randomBytes(32), sealed, 'ctx')).toThrow('could not be decrypted');
    expect(() => decryptSecret(key, sealed, 'other-row')).toThrow('could not be decrypted');
    const raw = Buffer.from(sealed.slice(3), 'base64url');
    raw[raw.length - 1] = (raw[raw.length - 1] as number) ^ 1;
    expect(() => decryptSecret(key, `v1.${raw.toString('base64url')}`, 'ctx')).toThrow('could not be decrypted');
    expect(() => decryptSecret(key, 'v2.abc', 'ctx')).toThrow('Unknown secret format');
    expect(() => decryptSecret(key, 'v1.abc', 'ctx')).toThrow('Truncated');
  });
});

describe('read tokens', () => {
  const tokens = new ReadTokens(randomBytes(32));
  const claim = { keyId: 'key_3Fq9Xm2Lp7Vn4Rb8Yc1Zd', publicId: 'task_3kT9xQ2mLp7Vn4Rb8Yc1Zd', expiresAt: 1_767_229_200 };

  it('round-trip; URL-safe; show nothing of the claim; never the same token twice', () => {
    const token = tokens.seal(claim);
    expect(token).toMatch(/^trt_[A-Za-z0-9_-]+$/);
    expect(encodeURIComponent(token)).toBe(token);
    expect(tokens.open(token)).toEqual(claim);
    expect(tokens.seal(claim)).not.toBe(token);
    const decoded = Buffer.from(token.slice(4), 'base64url').toString('latin1');
    for (const part of [claim.keyId, claim.publicId, String(claim.expiresAt), 'key_', 'task_']) expect(decoded).not.toContain(part);
  });

  it('refuses forgeries, alterations, truncations, another SECRETS_KEY and garbage', () => {
    const token = tokens.seal(claim);
    const flipped = token.slice(0, 20) + (token[20] === 'A' ? 'B' : 'A') + token.slice(21);
    for (const bad of [flipped, token.slice(0, -2), `${token}x`, `${token}xy`, 'trt_', 'trt_AAAA', `${token}x`.replace('trt_', 'rt_'), 'trt_' + 'A'.repeat(500), 'trt_***', '', 'sk-live-x']) {
      expect({ bad, claim: tokens.open(bad) }).toEqual({ bad, claim: null });
    }
    expect(new ReadTokens(randomBytes(32)).open(token)).toBeNull();
  });
});

describe('API keys', () => {
  it('generates typed keys with a 40-character base62 body, an 8-character visible prefix and a SHA-256', () => {
    const paid = generateApiKey('paid');
    expect(paid.plaintext).toMatch(/^sk-live-[A-Za-z0-9]{40}$/);
    expect(paid.prefix).toBe(paid.plaintext.slice(0, 'sk-live-'.length + 8));
    expect(paid.hash).toBe(sha256Hex(paid.plaintext));
    expect(generateApiKey('trial').plaintext).toMatch(/^sk-test-[A-Za-z0-9]{40}$/);
  });

  it('parses only well-formed keys', () => {
    const k = generateApiKey('trial');
    expect(parseApiKey(k.plaintext)).toEqual({ type: 'trial', hash: k.hash });
    for (const bad of ['', 'sk-live-', `sk-live-${'a'.repeat(31)}`, `sk-live-${'a'.repeat(129)}`, `sk-gold-${'a'.repeat(40)}`, ` ${k.plaintext}`, `${k.plaintext}=`]) {
      expect(parseApiKey(bad)).toBeNull();
    }
  });
});

describe('random and digests', () => {
  it('randomBase62 uses the whole alphabet without bias towards the first characters', () => {
    const s = randomBase62(62 * 2000);
    const counts = new Map<string, number>();
    for (const c of s) counts.set(c, (counts.get(c) ?? 0) + 1);
    expect(counts.size).toBe(62);
    // Expected 2000 each; a modulo bias on 256 % 62 would push the first 8 characters to ~2300.
    for (const n of counts.values()) {
      expect(n).toBeGreaterThan(1700);
      expect(n).toBeLessThan(2300);
    }
  });

  it('webhook secrets follow the Standard Webhooks format', () => {
    const s = generateWebhookSecret();
    expect(s).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(Buffer.from(s.slice(6), 'base64')).toHaveLength(32);
  });

  it('hex digests and constant-time comparison', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    expect(hmacSha256Hex('key', 'The quick brown fox jumps over the lazy dog')).toBe('f7bc83f430538424b13298e6aa6fb143ef4d59a14946175997479dbc2d1a3cd8');
    expect(safeEqual('abc', 'abc')).toBe(true);
    expect(safeEqual('abc', 'abd')).toBe(false);
    expect(safeEqual('abc', 'abcd')).toBe(false);
  });
});

describe('passwords (scrypt)', () => {
  it('hashes with a salt and verifies only the right password', async () => {
    const a = await hashPassword('correct horse');
    const b = await hashPassword('correct horse');
    expect(a).toMatch(/^scrypt\$32768\$8\$3\$/);
    expect(a).not.toBe(b);
    expect(await verifyPassword('correct horse', a)).toBe(true);
    expect(await verifyPassword('correct horsE', a)).toBe(false);
    expect(await verifyPassword('correct horse', 'garbage')).toBe(false);
    expect(await verifyPassword('correct horse', 'scrypt$1$1$1$$')).toBe(false);
  });
});
