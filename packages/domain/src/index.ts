export * from './task-rules';
export { TASK_E2E_METRIC, terminalStatusName, e2eSeconds } from './task-e2e-metric';
export { PROGRESS_TTL_SECONDS, PROGRESS_WRITES_PER_SECOND, parseProgress, roundProgress, TASK_CHANGED_CHANNEL, taskProgressKey } from './task-progress';
export { MARKER_TTL_SECONDS, taskStatusMarkerKey, TASK_FINISHED_CHANNEL, parseTaskFinished } from './task-status-marker';
export { webhookBody, webhookHeaders } from './webhook-request';
export type { WebhookSubject } from './webhook-request';
export { storableText, UNSTORABLE_TEXT } from './storable-text';
export {
  claimPrediction,
  forgetPrediction,
  MAX_PREDICTION_OUTPUT_FILES,
  MODEL_WEBHOOK_PATH,
  modelWebhookUrl,
  noteCancelledPrediction,
  ORPHANED_PREDICTIONS_KEY,
  returnOrphanedPredictions,
  takeOrphanedPredictions,
  PREDICTION_UPDATED_CHANNEL,
  predictionId,
  predictionKey,
  predictionProgress,
  progressFromLogs,
  readPrediction,
  recordPredictionUpdate,
  taskOfPrediction,
  TERMINAL_PREDICTION_STATUSES,
} from './model-predictions';
export type { OrphanRedis, PredictionRecord, PredictionRedis, PredictionUpdate } from './model-predictions';
