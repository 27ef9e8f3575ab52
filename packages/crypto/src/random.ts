import { randomFillSync } from 'node:crypto';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

// Random bytes are drawn from the CSPRNG 4 KB at a time and each byte is used once: one
// `randomBytes` call per id (a buffer and a call into OpenSSL each) was 4 % of the API's CPU under
// creation load. Not `Buffer.allocUnsafe`, which may hand out a slice of Node's shared pool.
const POOL_SIZE = 4096;
const pool = Buffer.allocUnsafeSlow(POOL_SIZE);
let offset = POOL_SIZE;

function nextRandomByte(): number {
  if (offset === POOL_SIZE) {
    randomFillSync(pool);
    offset = 0;
  }
  return pool[offset++] as number;
}

/**
 * `length` uniformly random base62 characters (about 5.95 bits each).
 * Bytes >= 248 are rejected so that `byte % 62` has no bias.
 */
export function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    const b = nextRandomByte();
    if (b < 248) out += BASE62[b % 62];
  }
  return out;
}
