import { setSpendLimit } from '../../domain/api-keys';
import { defineRoute } from '../../http/route';
import { apiKeySchema, updateApiKeyRequestSchema } from '../../schemas/console';
import { keyDeps } from './key-deps';
import { keyParams } from './key-params';

export const updateKeyRoute = defineRoute({
  operationId: 'updateApiKey',
  method: 'patch',
  path: '/api/keys/{keyId}',
  tag: 'API keys',
  summary: "Change an API key's spend limit",
  description:
    'Sets or removes (`null`) the spend limit of an active key. It applies to the very next task creation on every API replica. ' +
    'What the key has spent in the current period stays: a limit below it refuses every creation until the period ends.',
  auth: 'session',
  params: keyParams,
  body: { schema: updateApiKeyRequestSchema, limit: 16 * 1024, example: { spend_limit: { credits: 500, period: 'day' } } },
  responses: { 200: { description: 'The key with its new limit.', schema: apiKeySchema } },
  errors: ['KEY_REVOKED_NO_EDIT'],
  invalidExamples: [
    ['spend_limit missing', 'spend_limit', 'is required'],
    ['credits out of range, negative or not an integer', 'spend_limit.credits', 'must be an integer from 1 to 1000000000'],
    ['period neither day nor month', 'spend_limit.period', 'must be "day" or "month"'],
  ],
  async handler({ params, body }, { deps, principal }) {
    return { status: 200, json: await setSpendLimit(keyDeps(deps), principal.accountId, params.keyId, body.spend_limit) };
  },
});
