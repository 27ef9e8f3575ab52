import { performance } from 'node:perf_hooks';
import { decryptSecret, randomBase62, webhookSecretContext } from '@taskapi/crypto';
import { storableText, TaskStatus, webhookBody, webhookHeaders } from '@taskapi/domain';
import { EgressError, type EgressClient } from '@taskapi/egress';
import type { RedisClient } from '@taskapi/service';
import { ApiError } from '../errors';
import type { AccountRepository } from '../repositories/accounts';

/** Test webhooks per account per minute: enough to debug a receiver, too few to scan a network. */
export const TEST_WEBHOOKS_PER_MINUTE = 10;
/** How much of the receiver's answer is shown. */
export const TEST_EXCERPT_BYTES = 1024;
const WINDOW_SECONDS = 60;

export interface TestWebhookResult {
  /** The sample task id that was sent (`task_test…`). */
  public_id: string;
  status_code: number | null;
  duration_ms: number;
  /** Why it did not reach a 2xx: `HTTP 500`, a refused destination, a timeout, a TLS failure. */
  error: string | null;
  response_excerpt: string | null;
}

export interface TestWebhookDeps {
  accounts: AccountRepository;
  secretsKey: Buffer;
  egress: EgressClient;
  redis: RedisClient;
  timeoutMs: number;
}

/**
 * A sample id with the exact shape of a real one (`task_` + 22 base62 characters), so receivers'
 * id parsers accept it, whose body starts with `test` so nobody mistakes it for a real task.
 */
export const testPublicId = (): string => `task_test${randomBase62(18)}`;
const testDeliveryId = (): string => `whd_test${randomBase62(18)}`;

/**
 * Fixed window per account in Redis (the key carries the account's hash tag for Redis Cluster).
 * Counted before sending, so refused destinations count too: probing cannot be done for free.
 */
async function takeToken(redis: RedisClient, accountId: string): Promise<void> {
  const key = `taskapi:whtest:{${accountId}}`;
  const replies = await redis.multi().set(key, '0', 'EX', WINDOW_SECONDS, 'NX').incr(key).ttl(key).exec();
  const failed = replies?.find(([err]) => err);
  if (!replies || failed) throw failed?.[0] ?? new Error('rate limit transaction was aborted');
  const count = Number(replies[1]?.[1]);
  const ttl = Number(replies[2]?.[1]);
  // A reply that is not a count refuses rather than lets through.
  if (!Number.isFinite(count) || count > TEST_WEBHOOKS_PER_MINUTE) {
    throw new ApiError('RATE_LIMITED', { fields: { limit: TEST_WEBHOOKS_PER_MINUTE, window: 'minute', retry_after: Math.max(1, ttl) } });
  }
}

/** The first bytes of the answer as printable text: no NUL, no half surrogate, no cut character. */
function excerpt(body: Buffer, truncated: boolean): string | null {
  if (body.length === 0) return null;
  const text = storableText(body.subarray(0, TEST_EXCERPT_BYTES).toString('utf8'));
  // A character the byte cut split decodes as a trailing U+FFFD: drop it (only when there was a cut).
  return truncated || body.length > TEST_EXCERPT_BYTES ? text.replace(/\uFFFD+$/, '') : text;
}

/**
 * Sends one signed sample webhook (a completed task of `kind`) to `url`, exactly as the dispatcher
 * sends a real one: same body builder and headers, signed with the account's current secret,
 * through the same egress policy (private addresses refused unless WEBHOOK_ALLOW_PRIVATE_NETWORKS,
 * no redirects, WEBHOOK_TIMEOUT_MS). Any outcome of the POST is a 200 result with `error` set;
 * only the rate limit is an error.
 */
export async function sendTestWebhook(deps: TestWebhookDeps, accountId: string, url: string, kind: string): Promise<TestWebhookResult> {
  await takeToken(deps.redis, accountId);
  const account = await deps.accounts.webhookSecret(accountId);
  const secret = decryptSecret(deps.secretsKey, account.webhookSecretCiphertext, webhookSecretContext(accountId));
  const publicId = testPublicId();
  const body = webhookBody({
    public_id: publicId,
    task_status: TaskStatus.completed,
    kind,
    error_code: null,
    payload: '{"test":true}',
    // Only used by kinds whose webhook carries `result` (face detection): an image without faces.
    result: '{"face_coordinates":[]}',
  });
  const headers = webhookHeaders({ deliveryId: testDeliveryId(), attempt: 1, secret, body, now: new Date() });
  const t0 = performance.now();
  const result: TestWebhookResult = { public_id: publicId, status_code: null, duration_ms: 0, error: null, response_excerpt: null };
  try {
    const res = await deps.egress.request({ method: 'POST', url, headers, body, timeoutMs: deps.timeoutMs, maxResponseBytes: TEST_EXCERPT_BYTES });
    result.status_code = res.status;
    result.response_excerpt = excerpt(res.body, res.truncated);
    if (res.status < 200 || res.status > 299) result.error = `HTTP ${res.status}`;
  } catch (err) {
    if (!(err instanceof EgressError)) throw err;
    result.error = err.message;
  }
  result.duration_ms = Math.round(performance.now() - t0);
  return result;
}
