import { z } from 'zod';
import { checkReadiness } from '@taskapi/service';
import { defineRoute } from '../../http/route';
import { drainingSchema, readinessSchema } from '../../schemas/ops';

export const readinessRoute = defineRoute({
  operationId: 'readiness',
  method: 'get',
  path: '/readyz',
  tag: 'Operations',
  summary: 'Readiness',
  description:
    'Whether PostgreSQL and Redis answer (each within 2 seconds) and the file store has accepted a write since the process started (checked until it first has: afterwards an outage of the store answers 503 on the file routes, not here). After SIGTERM the API answers 503 `draining` at once, while it still serves requests for `SHUTDOWN_DRAIN_MS`.',
  auth: 'none',
  responses: {
    200: {
      description: 'Ready: every dependency answered.',
      schema: readinessSchema,
      examples: { ready: { value: { status: 'ready', checks: { database: 'ok', redis: 'ok', storage: 'ok' } } } },
    },
    503: {
      description: 'Not ready: a dependency did not answer, or the process is shutting down.',
      schema: z.union([readinessSchema, drainingSchema]),
      examples: {
        not_ready: { value: { status: 'not_ready', checks: { database: 'ok', redis: 'ok', storage: 'unavailable' } } },
        draining: { value: { status: 'draining' } },
      },
    },
  },
  async handler(_input, { deps }) {
    // Shutting down: load balancers take this replica out while it still serves what they send.
    if (deps.lifecycle.draining) return { status: 503, json: { status: 'draining' } };
    const { ready, body } = await checkReadiness(deps.readinessChecks);
    return { status: ready ? 200 : 503, json: body };
  },
});
