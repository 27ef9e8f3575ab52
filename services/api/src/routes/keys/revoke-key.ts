import { revokeKey } from '../../domain/api-keys';
import { defineRoute } from '../../http/route';
import { apiKeySchema } from '../../schemas/console';
import { keyDeps } from './key-deps';
import { keyParams } from './key-params';

export const revokeKeyRoute = defineRoute({
  operationId: 'revokeApiKey',
  method: 'post',
  path: '/api/keys/{keyId}/revoke',
  tag: 'API keys',
  summary: 'Revoke an API key',
  description: 'The very next request with the key fails on every API replica. Revoking a revoked key returns it unchanged.',
  auth: 'session',
  params: keyParams,
  responses: { 200: { description: 'The revoked key.', schema: apiKeySchema } },
  async handler({ params }, { deps, principal }) {
    return { status: 200, json: await revokeKey(keyDeps(deps), principal.accountId, params.keyId) };
  },
});
