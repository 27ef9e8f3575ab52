import { TASK_KINDS, type TaskKind } from '@taskapi/task-kinds';
import { sendTestWebhook, TEST_WEBHOOKS_PER_MINUTE } from '../../domain/test-webhook';
import { defineRoute } from '../../http/route';
import { sendTestWebhookRequestSchema, testWebhookResultSchema } from '../../schemas/test-webhook';

/** The sample's kind when the request names none. */
const DEFAULT_KIND: TaskKind = TASK_KINDS[0] as TaskKind;

export const sendTestWebhookRoute = defineRoute({
  operationId: 'sendTestWebhook',
  method: 'post',
  path: '/api/webhook-deliveries/test',
  tag: 'Webhook deliveries',
  summary: 'Send a test webhook',
  description:
    'POSTs one signed sample webhook (a completed task with `public_id` starting `task_test`, payload `{"test":true}`) to ' +
    '`url`, with the same headers, signature and body shape as a real one and the same egress rules (no private addresses ' +
    'unless the service allows them, no redirects, the same timeout). Whatever the receiver does, the answer is 200 with ' +
    "its `status_code`, `duration_ms`, `error` (null on a 2xx; a refused destination is an `error`, not a 4xx: the request " +
    `was valid) and the first 1 KB of its answer. Nothing is recorded. At most ${TEST_WEBHOOKS_PER_MINUTE} per account per minute.`,
  auth: 'session',
  body: { schema: sendTestWebhookRequestSchema, limit: 16 * 1024, example: { url: 'https://example.com/webhooks/taskapi' } },
  responses: { 200: { description: 'What the receiver answered.', schema: testWebhookResultSchema } },
  errors: ['RATE_LIMITED'],
  invalidExamples: [['url is not https', 'url', 'must be an https:// URL']],
  async handler({ body }, { deps, principal }) {
    const result = await sendTestWebhook(
      { accounts: deps.repos.accounts, secretsKey: deps.config.secretsKey, egress: deps.egress, redis: deps.redis, timeoutMs: deps.config.webhookTimeoutMs },
      principal.accountId,
      body.url,
      body.kind ?? DEFAULT_KIND,
    );
    return { status: 200, json: result };
  },
});
