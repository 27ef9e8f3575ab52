import { listGrants } from '../../domain/trial-grants';
import { defineRoute } from '../../http/route';
import { trialGrantListSchema } from '../../schemas/console';

export const listTrialGrantsRoute = defineRoute({
  operationId: 'listTrialGrants',
  method: 'get',
  path: '/api/trial-grants',
  tag: 'Account',
  summary: 'List trial grants',
  description: "The account's trial grants, newest first, each with the active key bound to it.",
  auth: 'session',
  responses: { 200: { description: 'The grants.', schema: trialGrantListSchema } },
  async handler(_input, { deps, principal }) {
    return { status: 200, json: { data: await listGrants(deps.repos.grants, principal.accountId) } };
  },
});
