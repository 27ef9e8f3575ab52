import { Queue } from 'bullmq';
import type { Cluster, Redis } from 'ioredis';
import { activeContext, inSendSpans } from '@taskapi/telemetry';
import { WEBHOOK_QUEUE, deliveryJobId, type WebhookJob } from './catalog';
import { withConnectionErrorsLoggedElsewhere } from './task-queues';

export interface WebhookQueue {
  queue: Queue<WebhookJob>;
  /**
   * Schedules one attempt of a delivery (idempotent: the job id is delivery id + attempt number),
   * its producer span in the active trace (docs/architecture.md, "Tracing").
   * @param delayMs wait before the attempt, in milliseconds (0 = now).
   * @param accountId the delivery's account, when known (lets the dispatcher claim and load at once).
   */
  enqueueAttempt(deliveryId: string, attempt: number, delayMs?: number, accountId?: string): Promise<void>;
}

/** Producer side of the webhook queue. */
export function createWebhookQueue(connection: Redis | Cluster): WebhookQueue {
  const queue = withConnectionErrorsLoggedElsewhere(
    new Queue<WebhookJob>(WEBHOOK_QUEUE.name, { connection, defaultJobOptions: WEBHOOK_QUEUE.defaultJobOptions }),
  );
  return {
    queue,
    async enqueueAttempt(deliveryId, attempt, delayMs = 0, accountId) {
      const data = WEBHOOK_QUEUE.schema.parse(accountId === undefined ? { delivery_id: deliveryId, attempt } : { delivery_id: deliveryId, attempt, account_id: accountId });
      const jobId = deliveryJobId(deliveryId, attempt);
      // Its producer span in the caller's trace: a run's or a delivery's (the task's), a resend request's.
      await inSendSpans(queue.name, () => [{ jobId, parent: activeContext() }], () => queue.add('deliver', data, { jobId, delay: delayMs }));
    },
  };
}
