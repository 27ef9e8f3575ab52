export * from './task-rules';
export { finishTask, finishTaskAndRecord } from './finish-task';
export type { FinishTaskInput, FinishedTask } from './finish-task';
export { TASK_E2E_METRIC, terminalStatusName, e2eSeconds } from './task-e2e-metric';
export { recordTaskStatus, seedTaskStatus, taskStatusMarkerKey, TASK_FINISHED_CHANNEL, parseTaskFinished } from './task-status-marker';
export type { MarkerRedis } from './task-status-marker';
export { webhookBody, webhookHeaders } from './webhook-request';
export type { WebhookSubject } from './webhook-request';
export { storableText, UNSTORABLE_TEXT } from './storable-text';
