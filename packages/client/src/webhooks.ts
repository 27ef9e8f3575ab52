// Webhook verification with Web Crypto only, so it runs in Node, browsers, Deno, Bun and edge
// runtimes alike. Both signatures the API sends are checked (docs/webhooks.md):
//   X-Signature       lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the secret's
//                     text (`whsec_…`, as UTF-8);
//   webhook-signature Standard Webhooks: `v1,` + base64 HMAC-SHA256 of `<webhook-id>.<webhook-timestamp>.<body>`,
//                     keyed with the base64-decoded part of the secret after `whsec_`.
import { WebhookVerificationError } from './errors';
import type { WebhookEvent } from './generated';
import { headerReader, type AnyHeaders } from './headers';

/** Default allowed distance between the signed timestamp and now (the Standard Webhooks default). */
export const DEFAULT_TOLERANCE_SECONDS = 300;

export interface VerifyWebhookOptions {
  /**
   * Largest accepted age (or clock skew) of the signed `webhook-timestamp`, in seconds. Default 300;
   * `Infinity` turns the check off. `X-Timestamp` is never checked: it is not signed, so a replay
   * could carry a fresh one.
   */
  toleranceSeconds?: number;
  /**
   * Refuse a request without the Standard Webhooks headers (`webhook-id`, `webhook-timestamp`,
   * `webhook-signature`). Default false. Recommended: the Task API always sends them, and without
   * them only `X-Signature` is checked, which proves the body is ours but not that it is fresh (no
   * replay protection).
   */
  requireStandardWebhooks?: boolean;
}

const encoder = new TextEncoder();

function bodyBytes(rawBody: unknown): Uint8Array {
  if (typeof rawBody === 'string') return encoder.encode(rawBody);
  // Checked without instanceof, which fails for buffers from another realm (vm contexts, test runners).
  if (ArrayBuffer.isView(rawBody)) return new Uint8Array(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength);
  if (Object.prototype.toString.call(rawBody) === '[object ArrayBuffer]') return new Uint8Array(rawBody as ArrayBuffer);
  throw new WebhookVerificationError(
    'The raw body must be the exact bytes received (a string, Uint8Array/Buffer or ArrayBuffer), not a parsed object: ' +
      'read it with express.raw() or request.arrayBuffer().',
  );
}

async function hmac(key: Uint8Array, ...parts: Uint8Array[]): Promise<Uint8Array> {
  const data = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    data.set(part, offset);
    offset += part.length;
  }
  const cryptoKey = await globalThis.crypto.subtle.importKey('raw', key as Uint8Array<ArrayBuffer>, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return new Uint8Array(await globalThis.crypto.subtle.sign('HMAC', cryptoKey, data));
}

/** Equal bytes, in time that depends only on the length (which is public: 32 bytes). */
function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a[i]! ^ b[i]!;
  return diff === 0;
}

function fromHex(hex: string): Uint8Array | undefined {
  if (!/^[0-9a-f]{64}$/i.test(hex)) return undefined;
  const out = new Uint8Array(32);
  for (let i = 0; i < 32; i++) out[i] = parseInt(hex.slice(i * 2, i * 2 + 2), 16);
  return out;
}

function fromBase64(text: string): Uint8Array | undefined {
  try {
    const binary = atob(text);
    return Uint8Array.from(binary, (c) => c.charCodeAt(0));
  } catch {
    return undefined; // not base64: no signature can match
  }
}

/**
 * Checks a webhook from the Task API and returns its parsed body. `rawBody` must be the exact bytes
 * received; `headers` a `Headers` object, a plain object in any letter case, or Node's
 * `req.headers`; `secret` the account's webhook secret (`whsec_…`). Verifies `X-Signature` (always
 * required) and, when any Standard Webhooks header is present (always, with
 * `requireStandardWebhooks`), all three of them and the age of the signed `webhook-timestamp`.
 * Without those headers there is no replay protection: `X-Signature` does not cover a timestamp.
 * Throws `WebhookVerificationError` when anything does not match.
 */
export async function verifyWebhook(
  rawBody: string | Uint8Array | ArrayBuffer,
  headers: AnyHeaders,
  secret: string,
  options: VerifyWebhookOptions = {},
): Promise<WebhookEvent> {
  if (typeof secret !== 'string' || secret === '') throw new TypeError('verifyWebhook needs the webhook secret (whsec_…).');
  const body = bodyBytes(rawBody);
  const header = headerReader(headers);

  const signature = header('x-signature');
  if (!signature) throw new WebhookVerificationError('Missing X-Signature header.');
  const expected = await hmac(encoder.encode(secret), body);
  const given = fromHex(signature.trim());
  if (!given || !constantTimeEqual(given, expected)) throw new WebhookVerificationError('X-Signature does not match the body.');

  const id = header('webhook-id');
  const stamp = header('webhook-timestamp');
  const standard = header('webhook-signature');
  const hasStandard = id !== undefined || stamp !== undefined || standard !== undefined;
  if (!hasStandard && options.requireStandardWebhooks) {
    throw new WebhookVerificationError('Missing Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature).');
  }
  if (hasStandard) {
    if (!id || !stamp || !standard) throw new WebhookVerificationError('Incomplete Standard Webhooks headers: webhook-id, webhook-timestamp and webhook-signature go together.');
    if (!/^\d{1,12}$/.test(stamp.trim())) throw new WebhookVerificationError('webhook-timestamp is not a unix time in seconds.');
    const key = fromBase64(secret.replace(/^whsec_/, ''));
    if (!key || key.length === 0) throw new WebhookVerificationError('webhook-signature does not match the body (the secret is not a whsec_ secret).');
    const mac = await hmac(key, encoder.encode(`${id}.${stamp.trim()}.`), body);
    // Several space-separated signatures may be sent during a secret rotation; one must match.
    const matches = standard
      .split(' ')
      .map((entry) => /^v1,(.+)$/.exec(entry.trim())?.[1])
      .some((b64) => b64 !== undefined && constantTimeEqual(fromBase64(b64) ?? new Uint8Array(), mac));
    if (!matches) throw new WebhookVerificationError('webhook-signature does not match the body.');
    // Only the signed timestamp is worth checking: an unsigned one (X-Timestamp) can be refreshed by
    // whoever replays the request.
    const tolerance = options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS;
    if (Number.isFinite(tolerance) && Math.abs(Date.now() / 1000 - Number(stamp.trim())) > tolerance) {
      throw new WebhookVerificationError('Webhook timestamp is outside the tolerance (a replay or a wrong clock).');
    }
  }

  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body)) as WebhookEvent;
  } catch {
    throw new WebhookVerificationError('Webhook body is not JSON.');
  }
}
