import { standardWebhookSignature, webhookSignature, webhookSigningKeys, type WebhookSigningKeys } from '@taskapi/crypto';
import { isTaskKind, TASK_KIND_CATALOG } from '@taskapi/task-kinds';
import { TaskStatus } from './task-rules';

/**
 * What a webhook body is made of: a task's outcome. Shared by the dispatcher (real deliveries) and
 * the API's test webhooks, so a test webhook is byte-for-byte shaped like a real one.
 */
export interface WebhookSubject {
  public_id: string;
  task_status: number;
  kind: string;
  error_code: string | null;
  /** Source text of the stored JSON (`json` columns keep it exactly). */
  payload: string | null;
  result: string | null;
}

/**
 * The webhook body (spec): `{"public_id","status","error_code","payload"}`, plus `"result"` for the
 * kinds whose catalog entry says so (face detection; `null` when it failed). Built as text so
 * `payload` and `result` go out exactly as stored.
 */
export function webhookBody(d: WebhookSubject): string {
  const completed = d.task_status === TaskStatus.completed;
  let body =
    `{"public_id":${JSON.stringify(d.public_id)}` +
    `,"status":${d.task_status}` +
    `,"error_code":${completed || d.error_code === null ? 'null' : JSON.stringify(d.error_code)}` +
    `,"payload":${d.payload ?? 'null'}`;
  if (isTaskKind(d.kind) && TASK_KIND_CATALOG[d.kind].webhook.result) body += `,"result":${completed && d.result !== null ? d.result : 'null'}`;
  return `${body}}`;
}

/**
 * Headers of one attempt, signed now with the account's current secret: the spec's `X-Signature`
 * and `X-Timestamp`, the Standard Webhooks trio (`webhook-id` is the delivery id, stable across
 * retries) and `X-Webhook-Attempt`.
 */
export function webhookHeaders(opts: { deliveryId: string; attempt: number; secret: string | WebhookSigningKeys; body: string; now: Date }): Record<string, string> {
  const timestamp = Math.floor(opts.now.getTime() / 1000);
  const keys = typeof opts.secret === 'string' ? webhookSigningKeys(opts.secret) : opts.secret;
  return {
    'content-type': 'application/json',
    'user-agent': 'TaskAPI-Webhooks/1.0',
    'x-signature': webhookSignature(keys, opts.body),
    'x-timestamp': String(timestamp),
    'webhook-id': opts.deliveryId,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': standardWebhookSignature(keys, opts.deliveryId, timestamp, opts.body),
    'x-webhook-attempt': String(opts.attempt),
  };
}
