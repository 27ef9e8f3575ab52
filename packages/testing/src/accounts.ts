import { randomBytes } from 'node:crypto';
import { hashPassword } from '@taskapi/crypto';

/** Every test account's password. */
export const TEST_PASSWORD = 'correct horse battery staple';

let cached: Promise<string> | undefined;

/** scrypt is deliberately slow; tests hash the shared password once per worker. */
export function testPasswordHash(): Promise<string> {
  cached ??= hashPassword(TEST_PASSWORD);
  return cached;
}

/** A unique, valid e-mail for one test. */
export function uniqueEmail(label = 'user'): string {
  return `${label}-${randomBytes(6).toString('hex')}@example.test`;
}
