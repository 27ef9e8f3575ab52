import type { Logger } from '@taskapi/logger';
import type { WebhookQueue } from '@taskapi/queue';
import { ApiError } from '../errors';
import type { DeliveryRepository, DeliveryRow } from '../repositories/deliveries';

export interface AttemptView {
  attempt_number: number;
  started_at: string;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
  response_excerpt: string | null;
  trace_id: string | null;
}

export interface DeliveryView {
  id: string;
  public_id: string;
  url: string;
  task_status: number;
  state: 'pending' | 'succeeded' | 'failed';
  attempt_count: number;
  next_attempt_at: string | null;
  created_at: string;
  completed_at: string | null;
  attempts: AttemptView[];
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function toView(row: DeliveryRow): DeliveryView {
  return {
    id: row.id,
    public_id: row.public_id,
    url: row.url,
    task_status: row.task_status,
    state: row.state,
    attempt_count: row.attempt_count,
    next_attempt_at: row.state === 'pending' ? iso(row.next_attempt_at) : null,
    created_at: row.created_at.toISOString(),
    completed_at: iso(row.completed_at),
    attempts: row.attempts.map((a) => ({ ...a, started_at: new Date(a.started_at).toISOString() })),
  };
}

/** The account's deliveries, newest first, each with every attempt; optionally those of one task. */
export async function listDeliveries(deliveries: DeliveryRepository, accountId: string, opts: { publicId?: string; limit: number }): Promise<DeliveryView[]> {
  return (await deliveries.list(accountId, opts)).map(toView);
}

/**
 * Sends a finished delivery (succeeded or given up) once more, now: one more attempt in the same
 * series, so `webhook-id` stays the same and receivers can de-duplicate. If that attempt fails and
 * the schedule still has retries after it, they follow. A pending delivery is refused (409).
 */
export async function resendDelivery(
  deps: { deliveries: DeliveryRepository; webhooks: WebhookQueue; logger: Logger },
  accountId: string,
  deliveryId: string,
): Promise<DeliveryView> {
  const reopened = await deps.deliveries.reopen(accountId, deliveryId);
  if (!reopened) throw new ApiError('DELIVERY_NOT_FOUND');
  if (reopened.attempt_count === null) throw new ApiError('DELIVERY_PENDING');
  try {
    await deps.webhooks.enqueueAttempt(deliveryId, reopened.attempt_count + 1, 0);
  } catch (err) {
    // The row says pending and due now: the dispatcher's sweeper sends it.
    deps.logger.warn('resend not enqueued; the sweeper will send it', { delivery_id: deliveryId, error: (err as Error).message });
  }
  const delivery = await deps.deliveries.get(accountId, deliveryId);
  if (!delivery) throw new ApiError('DELIVERY_NOT_FOUND');
  return toView(delivery);
}
