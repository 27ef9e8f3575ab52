// The route registry: every operation of the API, in matching order. The Express app
// (`mountRoutes`), `/api/openapi.json` and the client SDK's types are all built from this list.
import { TASK_KINDS } from '@taskapi/task-kinds';
import type { AuthScope } from '../http/mount-routes';
import type { Route } from '../http/route';
import { getBalanceRoute } from './account/get-balance';
import { getUsageRoute } from './account/get-usage';
import { getWebhookSecretRoute } from './account/get-webhook-secret';
import { listTrialGrantsRoute } from './account/list-trial-grants';
import { rotateWebhookSecretRoute } from './account/rotate-webhook-secret';
import { getSessionRoute } from './auth/get-session';
import { loginRoute } from './auth/login';
import { logoutRoute } from './auth/logout';
import { getConsoleConcurrencyRoute } from './console-tasks/get-console-concurrency';
import { getConsoleFairnessKeysRoute } from './console-tasks/get-console-fairness-keys';
import { getConsoleTaskRoute } from './console-tasks/get-console-task';
import { getConsoleTaskEventsRoute } from './console-tasks/get-console-task-events';
import { getConsoleTaskFileRoute } from './console-tasks/get-console-task-file';
import { getConsoleTaskInputRoute } from './console-tasks/get-console-task-input';
import { getConsoleUsageRoute } from './console-tasks/get-console-usage';
import { listConsoleTasksRoute } from './console-tasks/list-console-tasks';
import { createKeyRoute } from './keys/create-key';
import { listKeysRoute } from './keys/list-keys';
import { reissueKeyRoute } from './keys/reissue-key';
import { revealKeyRoute } from './keys/reveal-key';
import { revokeKeyRoute } from './keys/revoke-key';
import { updateKeyRoute } from './keys/update-key';
import { healthRoute } from './ops/health';
import { metricsRoute } from './ops/metrics';
import { openApiDocumentRoute } from './ops/openapi-document';
import { readinessRoute } from './ops/readiness';
import { getPublicTaskEventsRoute, getPublicTaskFileRoute, getPublicTaskRoute } from './public/public-task';
import { cancelTaskRoute } from './tasks/cancel-task';
import { createReadTokenRoute } from './tasks/create-read-token';
import { cancelTasksRoute } from './tasks/cancel-tasks';
import { createTaskRoute } from './tasks/create-task';
import { createTaskBatchRoute } from './tasks/create-task-batch';
import { getTaskRoute } from './tasks/get-task';
import { getSignedTaskFileRoute } from './tasks/get-signed-task-file';
import { getTaskFileRoute } from './tasks/get-task-file';
import { listTasksRoute } from './tasks/list-tasks';
import { taskEventsRoute } from './tasks/task-events';
import { listDeliveriesRoute } from './webhook-deliveries/list-deliveries';
import { resendDeliveryRoute } from './webhook-deliveries/resend-delivery';
import { sendTestWebhookRoute } from './webhook-deliveries/send-test-webhook';

export const ROUTES: readonly Route[] = [
  // The task API first: it carries nearly all traffic, so it should match after the fewest layers.
  ...TASK_KINDS.map(createTaskRoute),
  ...TASK_KINDS.map(createTaskBatchRoute),
  listTasksRoute,
  cancelTasksRoute,
  getTaskRoute,
  cancelTaskRoute,
  taskEventsRoute,
  getTaskFileRoute,
  getSignedTaskFileRoute,
  createReadTokenRoute,
  getPublicTaskRoute,
  getPublicTaskEventsRoute,
  getPublicTaskFileRoute,
  healthRoute,
  readinessRoute,
  metricsRoute,
  openApiDocumentRoute(() => ROUTES),
  loginRoute,
  logoutRoute,
  getSessionRoute,
  listKeysRoute,
  createKeyRoute,
  updateKeyRoute,
  revokeKeyRoute,
  reissueKeyRoute,
  revealKeyRoute,
  listConsoleTasksRoute,
  getConsoleTaskRoute,
  getConsoleTaskEventsRoute,
  getConsoleTaskFileRoute,
  getConsoleTaskInputRoute,
  getConsoleUsageRoute,
  getConsoleConcurrencyRoute,
  getConsoleFairnessKeysRoute,
  listDeliveriesRoute,
  resendDeliveryRoute,
  sendTestWebhookRoute,
  getBalanceRoute,
  getUsageRoute,
  listTrialGrantsRoute,
  getWebhookSecretRoute,
  rotateWebhookSecretRoute,
];

/**
 * Prefixes authenticated before routing: unknown paths below them answer 401 without
 * credentials, like known ones, so nobody can probe which endpoints exist.
 */
export const AUTH_SCOPES: readonly AuthScope[] = [
  { prefix: '/api/tasks', auth: 'apiKey' },
  { prefix: '/api/public', auth: 'readToken' },
  { prefix: '/api/keys', auth: 'session' },
  { prefix: '/api/console/tasks', auth: 'session' },
  { prefix: '/api/webhook-deliveries', auth: 'session' },
];
