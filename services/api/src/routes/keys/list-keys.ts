import { listKeys } from '../../domain/api-keys';
import { defineRoute } from '../../http/route';
import { apiKeyListSchema, listKeysQuerySchema } from '../../schemas/console';

export const listKeysRoute = defineRoute({
  operationId: 'listApiKeys',
  method: 'get',
  path: '/api/keys',
  tag: 'API keys',
  summary: "List the account's API keys",
  description: 'Every key, newest first, with its status; never the plaintext.',
  auth: 'session',
  query: listKeysQuerySchema,
  responses: { 200: { description: 'The keys.', schema: apiKeyListSchema } },
  invalidExamples: [['type filter is neither "paid" nor "trial"', 'type', 'must be "paid" or "trial"']],
  async handler({ query }, { deps, principal }) {
    return { status: 200, json: { data: await listKeys(deps.repos.keys, principal.accountId, query.type) } };
  },
});
