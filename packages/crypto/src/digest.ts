import { createHmac, hash, timingSafeEqual } from 'node:crypto';

/** Lower-case hex SHA-256 of a string (UTF-8) or bytes. */
export function sha256Hex(data: string | Buffer): string {
  // One-shot: no Hash object per call (every key-authenticated request hashes its key).
  return hash('sha256', data, 'hex');
}

/** Lower-case hex HMAC-SHA256 of `data` keyed with `key`. */
export function hmacSha256Hex(key: string | Buffer, data: string | Buffer): string {
  return createHmac('sha256', key).update(data).digest('hex');
}

/** Constant-time string comparison (lengths may leak, contents do not). */
export function safeEqual(a: string, b: string): boolean {
  const ab = Buffer.from(a);
  const bb = Buffer.from(b);
  return ab.length === bb.length && timingSafeEqual(ab, bb);
}
