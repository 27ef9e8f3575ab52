import { defineRoute } from '../../http/route';
import { bulkCancelRequestSchema, bulkCancelResultSchema } from '../../schemas/tasks';

/** `POST /api/tasks/cancel`: many tasks at once, by ids or by filter, each as the single cancel. */
export const cancelTasksRoute = defineRoute({
  operationId: 'cancelTasks',
  method: 'post',
  path: '/api/tasks/cancel',
  tag: 'Tasks',
  summary: 'Cancel many tasks',
  description:
    'Cancels, with one request, the tasks of `ids` (up to 1000) or every non-terminal task of the account matching `filter` ' +
    '(`kind`, `status` 0 or 10, `fairness_key`; all of them when empty). Each is cancelled as `POST /api/tasks/{publicId}/cancel` ' +
    'does: status 40, its cost refunded in full, no webhook, a running engine stopped. Retrying the request cancels nothing ' +
    'twice (already cancelled tasks are `already_finished`). Counts as one request for rate limits.',
  auth: 'apiKey',
  body: { schema: bulkCancelRequestSchema, limit: 128 * 1024, example: { ids: ['task_3kT9xQ2mLp7Vn4Rb8Yc1Zd'] } },
  responses: { 200: { description: 'How many were cancelled and, for `ids`, what became of each.', schema: bulkCancelResultSchema } },
  invalidExamples: [
    ['Both ids and filter, or neither', '(body)', 'must have exactly one of ids and filter'],
    ['ids empty, or more than 1000', 'ids', 'must list 1 to 1000 task ids'],
    ['A filter field the endpoint does not know', 'filter.colour', 'is not a known field'],
    ['status other than 0 or 10', 'filter.status', 'must be 0 or 10'],
  ],
  async handler({ body }, { deps, principal }) {
    const { cancels } = deps.taskLifecycle;
    if (body.ids) {
      const { cancelled, outcomes } = await cancels.cancelIds(principal.accountId, body.ids);
      return { status: 200, json: { cancelled, results: body.ids.map((id, i) => ({ public_id: id, outcome: outcomes[i]! })) } };
    }
    const filter = body.filter ?? {};
    const cancelled = await cancels.cancelMatching(principal.accountId, { kind: filter.kind, status: filter.status, fairnessKey: filter.fairness_key });
    return { status: 200, json: { cancelled } };
  },
});
