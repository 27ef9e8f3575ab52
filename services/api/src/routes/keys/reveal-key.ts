import { revealKey } from '../../domain/api-keys';
import { defineRoute } from '../../http/route';
import { revealedApiKeySchema } from '../../schemas/console';
import { keyDeps } from './key-deps';
import { keyParams } from './key-params';

export const revealKeyRoute = defineRoute({
  operationId: 'revealApiKey',
  method: 'post',
  path: '/api/keys/{keyId}/reveal',
  tag: 'API keys',
  summary: 'Reveal an API key',
  description: "Shows an active key's plaintext again. Every reveal is recorded (account, key, IP, user agent) before it is answered.",
  auth: 'session',
  params: keyParams,
  responses: { 200: { description: 'The plaintext key.', schema: revealedApiKeySchema } },
  errors: ['KEY_NOT_ACTIVE'],
  async handler({ params }, { deps, principal, req }) {
    const audit = { ip: req.ip, userAgent: req.get('user-agent') };
    return { status: 200, json: await revealKey(keyDeps(deps), principal.accountId, params.keyId, audit) };
  },
});
