import { rotateWebhookSecret } from '../../domain/webhook-secret';
import { defineRoute } from '../../http/route';
import { webhookSecretSchema } from '../../schemas/console';

export const rotateWebhookSecretRoute = defineRoute({
  operationId: 'rotateWebhookSecret',
  method: 'post',
  path: '/api/webhook-secret/rotate',
  tag: 'Account',
  summary: 'Rotate the webhook secret',
  description: 'Replaces the secret at once: every webhook sent from now on, retries included, is signed with the new one (no overlap).',
  auth: 'session',
  responses: { 200: { description: 'The new secret.', schema: webhookSecretSchema } },
  async handler(_input, { deps, principal }) {
    return { status: 200, json: await rotateWebhookSecret(deps.repos.accounts, deps.config.secretsKey, principal.accountId) };
  },
});
