import type { DefaultJobOptions } from 'bullmq';
import { perTaskKind } from '@taskapi/task-kinds';
import { z } from 'zod';

/**
 * A task job is one run of a task, released by the fair scheduler (docs/fair-scheduling.md). It
 * carries ids only; the worker reloads the row and skips work already done. Jobs queued by earlier
 * releases carry only `public_id` (their release is the first).
 */
export const taskJobSchema = z.object({
  public_id: z.string().startsWith('task_'),
  /** The task's account, so the worker can tell the scheduler the run started before loading the row. */
  account_id: z.string().optional(),
  /** Which release of the task this job is (1 for the first run; a hand-back or retry is released again). */
  release: z.number().int().min(1).optional(),
});
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
  /** The trace the attempt was sent in (docs/architecture.md, "Tracing"); absent with tracing off. */
  trace_id: z.string().nullable().optional(),
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

/**
 * Runs of one task: a transient engine failure is retried (after `TASK_RETRY_BACKOFF_MS` × 2^(run − 1),
 * ahead of the account's other tasks) until the last run's failure fails the task with a refund.
 * Runs are counted in the task row (`attempts`).
 */
export const TASK_MAX_ATTEMPTS = 3;

const taskJobOptions: DefaultJobOptions = {
  // A job that breaks outside the engine (the database unreachable at its start) and stalled jobs
  // (a worker that died mid-task) are retried by BullMQ; the worker fails the task with a refund
  // when the job gives up.
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

/**
 * Deterministic job id of one release of a task: adding it twice is a no-op. The first release's id
 * is the task's public id (as in releases before the scheduler); later ones add `-<release>`.
 */
export function taskJobId(publicId: string, release = 1): string {
  return release === 1 ? publicId : `${publicId}-${release}`;
}

/** Deterministic job id of one delivery attempt. */
export function deliveryJobId(deliveryId: string, attempt: number): string {
  return `${deliveryId}-${attempt}`;
}
