import { reissueKey } from '../../domain/api-keys';
import { defineRoute } from '../../http/route';
import { reissuedApiKeySchema } from '../../schemas/console';
import { keyDeps } from './key-deps';
import { keyParams } from './key-params';

export const reissueKeyRoute = defineRoute({
  operationId: 'reissueApiKey',
  method: 'post',
  path: '/api/keys/{keyId}/reissue',
  tag: 'API keys',
  summary: 'Reissue an API key',
  description: 'Revokes the key and creates its replacement (same type, same grant) in one transaction.',
  auth: 'session',
  params: keyParams,
  responses: { 201: { description: 'The new key with its plaintext, and the revoked one.', schema: reissuedApiKeySchema } },
  errors: ['KEY_REVOKED_NO_REISSUE', 'GRANT_EXPIRED', 'GRANT_EXHAUSTED'],
  async handler({ params }, { deps, principal }) {
    return { status: 201, json: await reissueKey(keyDeps(deps), principal.accountId, params.keyId) };
  },
});
