import { randomBase62 } from './random';
import { sha256Hex } from './digest';

export type ApiKeyType = 'paid' | 'trial';

/** Type prefixes of API keys. */
export const API_KEY_PREFIXES: Readonly<Record<ApiKeyType, string>> = { paid: 'sk-live-', trial: 'sk-test-' };
/** Random base62 characters after the prefix (about 238 bits). */
export const API_KEY_BODY_LENGTH = 40;
/** Body characters shown in `key_prefix`. */
const VISIBLE_BODY_CHARS = 8;
/** Longest body we accept when parsing; anything longer is not one of ours. */
const MAX_BODY_LENGTH = 128;

const KEY_PATTERN = /^sk-(live|test)-([A-Za-z0-9]+)$/;

export interface GeneratedApiKey {
  plaintext: string;
  /** `sk-live-` / `sk-test-` plus the first 8 body characters. */
  prefix: string;
  /** Hex SHA-256 of the whole key: what the database stores and looks up by. */
  hash: string;
}

export interface ParsedApiKey {
  type: ApiKeyType;
  hash: string;
}

export function generateApiKey(type: ApiKeyType): GeneratedApiKey {
  const body = randomBase62(API_KEY_BODY_LENGTH);
  const plaintext = API_KEY_PREFIXES[type] + body;
  return { plaintext, prefix: API_KEY_PREFIXES[type] + body.slice(0, VISIBLE_BODY_CHARS), hash: sha256Hex(plaintext) };
}

/** The key's type and hash, or null when it is not shaped like one of our keys. */
export function parseApiKey(value: string): ParsedApiKey | null {
  const m = KEY_PATTERN.exec(value);
  if (!m) return null;
  const body = m[2] as string;
  if (body.length < 32 || body.length > MAX_BODY_LENGTH) return null;
  return { type: m[1] === 'live' ? 'paid' : 'trial', hash: sha256Hex(value) };
}
