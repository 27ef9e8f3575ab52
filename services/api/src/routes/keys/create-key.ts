import { createKey } from '../../domain/api-keys';
import { defineRoute } from '../../http/route';
import { createApiKeyRequestSchema, createdApiKeySchema } from '../../schemas/console';
import { keyDeps } from './key-deps';

export const createKeyRoute = defineRoute({
  operationId: 'createApiKey',
  method: 'post',
  path: '/api/keys',
  tag: 'API keys',
  summary: 'Create an API key',
  description:
    'A paid key, or a trial key bound to an unexpired grant with quota left and no active key. The plaintext is in this ' +
    'response and can be revealed again later (every reveal is audited).',
  auth: 'session',
  body: { schema: createApiKeyRequestSchema, limit: 16 * 1024, example: { type: 'trial', grant_id: 'grant_7Hq2Lm9Xc4Vb1Nz8Kp3Rt6' } },
  responses: { 201: { description: 'The key, with its plaintext.', schema: createdApiKeySchema } },
  errors: ['GRANT_NOT_FOUND', 'GRANT_EXPIRED', 'GRANT_EXHAUSTED', 'GRANT_ALREADY_BOUND'],
  invalidExamples: [
    ['type is neither "paid" nor "trial"', 'type', 'must be "paid" or "trial"'],
    ['Trial key without grant_id', 'grant_id', 'is required for trial keys'],
    ['grant_id not shaped like a grant id', 'grant_id', 'is not a trial grant id'],
  ],
  async handler({ body }, { deps, principal }) {
    return { status: 201, json: await createKey(keyDeps(deps), principal.accountId, body) };
  },
});
