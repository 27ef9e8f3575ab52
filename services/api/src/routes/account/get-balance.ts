import { listGrants } from '../../domain/trial-grants';
import { defineRoute } from '../../http/route';
import { creditBalanceSchema } from '../../schemas/console';

export const getBalanceRoute = defineRoute({
  operationId: 'getCreditBalance',
  method: 'get',
  path: '/api/credits/balance',
  tag: 'Account',
  summary: 'Credit balance',
  description: 'The paid balance and every trial grant with its remaining quota.',
  auth: 'session',
  responses: { 200: { description: 'The balance.', schema: creditBalanceSchema } },
  async handler(_input, { deps, principal }) {
    const [paidBalance, grants] = await Promise.all([
      deps.repos.accounts.paidBalance(principal.accountId),
      listGrants(deps.repos.grants, principal.accountId),
    ]);
    return { status: 200, json: { paid_balance: paidBalance, trial_grants: grants } };
  },
});
