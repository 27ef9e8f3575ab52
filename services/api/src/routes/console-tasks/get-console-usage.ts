import { usageReport } from '../../domain/usage';
import { defineRoute } from '../../http/route';
import { MAX_USAGE_DAYS, usageQuerySchema, usageReportSchema } from '../../schemas/usage';

/** `GET /api/console/usage`: the dashboard's chart. Straight from PostgreSQL (an index-only scan). */
export const getConsoleUsageRoute = defineRoute({
  operationId: 'getConsoleUsage',
  method: 'get',
  path: '/api/console/usage',
  tag: 'Console tasks',
  summary: "The account's usage per day (console)",
  description:
    'Per UTC day, the tasks created (in total and per kind), what became of them so far (completed, failed, cancelled, ' +
    'still in progress), the credits they cost net of refunds, and the failure rate. Every day of the window is present, ' +
    'with zeros when nothing was created.',
  auth: 'session',
  query: usageQuerySchema,
  responses: { 200: { description: 'The usage report.', schema: usageReportSchema } },
  invalidExamples: [['days out of range', 'days', `must be an integer from 1 to ${MAX_USAGE_DAYS}`]],
  async handler({ query }, { deps, principal }) {
    return { status: 200, json: await usageReport(deps.repos.tasks, principal.accountId, query.days) };
  },
});
