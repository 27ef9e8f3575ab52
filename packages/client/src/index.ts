// @taskapi/client: the Task API from JavaScript and TypeScript (packages/client/README.md). No runtime
// dependencies (eventsource-parser is bundled); fetch and Web Crypto only, so it runs in Node ≥ 20,
// browsers and edge runtimes.
export { TaskApi, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS, type TaskApiOptions } from './client';
export { TaskApiError, TaskApiConnectionError, TaskApiTimeoutError, TaskWaitTimeoutError, WebhookVerificationError } from './errors';
export { Tasks, TERMINAL_STATUSES, DEFAULT_LONG_POLL_SECONDS, type TaskOf, type CreateOptions, type ListOptions, type RequestOptions, type WaitOptions } from './tasks';
export { DEFAULT_EVENT_IDLE_TIMEOUT_MS, DEFAULT_EVENT_RECONNECTS, type EventsOptions } from './task-events';
export { Files, DEFAULT_DOWNLOAD_TIMEOUT_MS, type DownloadOptions } from './files';
export { verifyWebhook, DEFAULT_TOLERANCE_SECONDS, type VerifyWebhookOptions } from './webhooks';
export type { AnyHeaders, HeaderRecord, HeadersLike } from './headers';
export { VERSION } from './version';
export { API_VERSION, TASK_KINDS } from './generated';
export type {
  CreateFaceDetectionTask,
  CreateImageTask,
  CreateTaskInputs,
  CreateVideoTask,
  BatchExceedsRateLimit,
  BulkCancelRequest,
  BulkCancelResult,
  ErrorBody,
  ExpiredTrialKey,
  FaceCoordinate,
  FaceDetectionResult,
  InsufficientCredits,
  RateLimited,
  ReadToken,
  SpendLimitReached,
  Task,
  TaskBatch,
  TaskErrorCode,
  TaskFile,
  TaskInput,
  TaskKind,
  TaskList,
  TaskStatus,
  ValidationError,
  WebhookEvent,
} from './generated';
