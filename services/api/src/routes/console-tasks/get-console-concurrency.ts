import { unavailable } from '../../errors';
import { defineRoute } from '../../http/route';
import { concurrencySchema } from '../../schemas/concurrency';

/** `GET /api/console/concurrency`: the dashboard's "running now: r of N". */
export const getConsoleConcurrencyRoute = defineRoute({
  operationId: 'getConsoleConcurrency',
  method: 'get',
  path: '/api/console/concurrency',
  tag: 'Console tasks',
  summary: "The account's running tasks and its cap (console)",
  description:
    'How many of the account\'s tasks run now, all kinds together, and the cap on them; how many wait for a worker, and of ' +
    'those how many wait only because the cap is reached. Tasks over the cap simply wait (status 0); creation is never refused ' +
    "for it. Each kind's workers are shared fairly: a freed worker goes to the account with the fewest tasks of that kind running.",
  auth: 'session',
  responses: { 200: { description: 'The account\'s use of its cap.', schema: concurrencySchema } },
  async handler(_input, { deps, principal }) {
    const [own, load] = await Promise.all([
      deps.repos.accounts.maxRunning(principal.accountId),
      deps.taskLifecycle.queueFigures.accountLoad(principal.accountId).catch((err: unknown) => {
        throw unavailable('redis', err);
      }),
    ]);
    const maxRunning = own ?? deps.config.accountMaxRunning;
    const room = Math.max(0, maxRunning - load.running);
    return {
      status: 200,
      json: { running: load.running, max_running: maxRunning, waiting: load.waiting, held_by_cap: Math.max(0, load.waiting - room) },
    };
  },
});
