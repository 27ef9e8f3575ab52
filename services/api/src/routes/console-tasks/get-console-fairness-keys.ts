import { unavailable } from '../../errors';
import { defineRoute } from '../../http/route';
import { fairnessKeysSchema } from '../../schemas/concurrency';

/** `GET /api/console/fairness-keys`: the dashboard's "Waiting by fairness key". */
export const getConsoleFairnessKeysRoute = defineRoute({
  operationId: 'getConsoleFairnessKeys',
  method: 'get',
  path: '/api/console/fairness-keys',
  tag: 'Console tasks',
  summary: "The account's waiting and running tasks by kind and fairness key (console)",
  description:
    "Inside the account, each kind's tasks take turns across fairness keys: the next one comes from the key with the fewest of " +
    "the account's running tasks of that kind. This lists, per kind and `fairness_key` (`null`: tasks created without one), how " +
    'many wait and how many run, most waiting first: which of your own end users holds your cap.',
  auth: 'session',
  responses: { 200: { description: 'Per kind and fairness key, what waits and what runs.', schema: fairnessKeysSchema } },
  async handler(_input, { deps, principal }) {
    const groups = await deps.taskLifecycle.queueFigures.accountGroups(principal.accountId).catch((err: unknown) => {
      throw unavailable('redis', err);
    });
    const data = groups
      .map((g) => ({ kind: g.kind, fairness_key: g.fairnessKey, waiting: g.waiting, running: g.running }))
      .sort((a, b) => b.waiting - a.waiting || b.running - a.running || a.kind.localeCompare(b.kind) || (a.fairness_key ?? '').localeCompare(b.fairness_key ?? ''));
    return { status: 200, json: { data } };
  },
});
