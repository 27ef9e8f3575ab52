import { defineRoute } from '../../http/route';
import { healthSchema } from '../../schemas/ops';

export const healthRoute = defineRoute({
  operationId: 'health',
  method: 'get',
  path: '/healthz',
  tag: 'Operations',
  summary: 'Liveness',
  description: 'The process is up. Checks nothing else.',
  auth: 'none',
  responses: { 200: { description: 'Alive.', schema: healthSchema } },
  handler: () => ({ status: 200, json: { status: 'ok' } }),
});
