export {
  TASK_MAX_ATTEMPTS,
  TASK_QUEUES,
  WEBHOOK_QUEUE,
  taskJobSchema,
  webhookJobSchema,
  webhookAttemptResultSchema,
  taskJobId,
  deliveryJobId,
} from './catalog';
export type { TaskJob, WebhookJob, WebhookAttemptResult, QueueDefinition } from './catalog';
export { createTaskQueues, closeQueues } from './task-queues';
export type { TaskQueues, TaskRun } from './task-queues';
export { createWebhookQueue } from './webhook-queue';
export { jobOutcome } from './job-outcome';
export type { JobOutcome } from './job-outcome';
export type { WebhookQueue } from './webhook-queue';
