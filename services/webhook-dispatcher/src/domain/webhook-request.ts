import type { WebhookSigningKeys } from '@taskapi/crypto';
import { webhookBody, webhookHeaders } from '@taskapi/domain';
import type { ClaimedDelivery } from '../repositories/deliveries';
import type { WebhookRequest } from './send-attempt';

// The body and headers live in @taskapi/domain: the API's test webhooks build them the same way.
export { webhookBody, webhookHeaders };

/**
 * The request of attempt `attempt` of `delivery`: its body, and headers signed at `now` with the
 * account's current secret (`keys`). Built before the number is claimed.
 */
export function webhookRequest(delivery: ClaimedDelivery, keys: WebhookSigningKeys, attempt: number, now: Date): WebhookRequest {
  const body = webhookBody(delivery);
  return { url: delivery.url, body, headers: webhookHeaders({ deliveryId: delivery.id, attempt, secret: keys, body, now }), traceParent: delivery.trace_parent };
}
