import type { DefaultJobOptions } from 'bullmq';
import { perTaskKind } from '@taskapi/task-kinds';
import { z } from 'zod';

/** Task jobs carry only the id; the worker reloads the row and skips work already done. */
export const taskJobSchema = z.object({ public_id: z.string().startsWith('task_') });
export type TaskJob = z.infer<typeof taskJobSchema>;

/**
 * How a sent attempt ended (the receiver's answer, or the timeout or connection failure), while its
 * recording in PostgreSQL is still owed. The dispatcher writes it into the attempt's job only when
 * PostgreSQL could not be reached, so the result outlives a dispatcher restart until it is recorded.
 */
export const webhookAttemptResultSchema = z.object({
  /** When the attempt ended, in Unix milliseconds: the next retry is timed from it. */
  finished_at: z.number().int().min(0),
  duration_ms: z.number().int().min(0),
  status_code: z.number().int().nullable(),
  error: z.string().nullable(),
  response_excerpt: z.string().nullable(),
});
export type WebhookAttemptResult = z.infer<typeof webhookAttemptResultSchema>;

/** Webhook jobs carry the delivery id, which attempt (1-based) they are, and a result still to record. */
export const webhookJobSchema = z.object({
  delivery_id: z.string().startsWith('whd_'),
  attempt: z.number().int().min(1),
  /**
   * The delivery's account, when the producer knows it: a dispatcher holding that account's
   * decrypted secret then claims and loads the attempt in one statement. Optional (older jobs and
   * producers without it take the full path); never trusted beyond that: the claim checks it.
   */
  account_id: z.string().optional(),
  result: webhookAttemptResultSchema.optional(),
});
export type WebhookJob = z.infer<typeof webhookJobSchema>;

export interface QueueDefinition<S extends z.ZodType = z.ZodType> {
  /**
   * BullMQ queue name. The braces are a Redis Cluster hash tag: every key of one queue lands in one
   * slot, while different queues spread over the cluster.
   */
  name: string;
  schema: S;
  defaultJobOptions: DefaultJobOptions;
}

const taskJobOptions: DefaultJobOptions = {
  // Transient failures (and stalled jobs: a worker that died mid-task) are retried; the worker
  // fails the task with a refund when the last attempt fails.
  attempts: 3,
  backoff: { type: 'exponential', delay: 5_000 },
  removeOnComplete: { age: 24 * 3600, count: 10_000 },
  removeOnFail: { age: 7 * 24 * 3600 },
};

/** One queue per task kind, so each kind scales with its own workers. */
export const TASK_QUEUES = perTaskKind(
  (_definition, kind): QueueDefinition<typeof taskJobSchema> => ({ name: `{tasks-${kind}}`, schema: taskJobSchema, defaultJobOptions: taskJobOptions }),
);

export const WEBHOOK_QUEUE = {
  name: '{webhooks}',
  schema: webhookJobSchema,
  defaultJobOptions: {
    // Retries follow the webhook schedule (WEBHOOK_RETRY_DELAYS_MS) as new delayed jobs, not
    // BullMQ backoff; a job attempt that crashes is retried by BullMQ a few times.
    attempts: 3,
    backoff: { type: 'exponential', delay: 1_000 },
    removeOnComplete: { age: 24 * 3600, count: 10_000 },
    removeOnFail: { age: 7 * 24 * 3600 },
  },
} satisfies QueueDefinition<typeof webhookJobSchema>;

/** Deterministic job id of a task: enqueueing the same task twice is a no-op. */
export function taskJobId(publicId: string): string {
  return publicId;
}

/** Deterministic job id of one delivery attempt. */
export function deliveryJobId(deliveryId: string, attempt: number): string {
  return `${deliveryId}-${attempt}`;
}
