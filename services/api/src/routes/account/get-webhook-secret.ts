import { getWebhookSecret } from '../../domain/webhook-secret';
import { defineRoute } from '../../http/route';
import { webhookSecretSchema } from '../../schemas/console';

export const getWebhookSecretRoute = defineRoute({
  operationId: 'getWebhookSecret',
  method: 'get',
  path: '/api/webhook-secret',
  tag: 'Account',
  summary: 'The webhook secret',
  description: 'The secret that signs webhooks (`X-Signature` and Standard Webhooks `webhook-signature`).',
  auth: 'session',
  responses: { 200: { description: 'The current secret.', schema: webhookSecretSchema } },
  async handler(_input, { deps, principal }) {
    return { status: 200, json: await getWebhookSecret(deps.repos.accounts, deps.config.secretsKey, principal.accountId) };
  },
});
