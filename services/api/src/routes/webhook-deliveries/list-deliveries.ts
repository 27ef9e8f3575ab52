import { listDeliveries } from '../../domain/webhook-deliveries';
import { defineRoute } from '../../http/route';
import { listDeliveriesQuerySchema, webhookDeliveryListSchema } from '../../schemas/console';

export const listDeliveriesRoute = defineRoute({
  operationId: 'listWebhookDeliveries',
  method: 'get',
  path: '/api/webhook-deliveries',
  tag: 'Webhook deliveries',
  summary: 'The webhook delivery log',
  description: 'Deliveries newest first, each with every attempt (status, duration, error, the start of the answer).',
  auth: 'session',
  query: listDeliveriesQuerySchema,
  responses: { 200: { description: 'The deliveries.', schema: webhookDeliveryListSchema } },
  invalidExamples: [['limit out of range', 'limit', 'must be an integer from 1 to 100']],
  async handler({ query }, { deps, principal }) {
    const data = await listDeliveries(deps.repos.deliveries, principal.accountId, { publicId: query.public_id, limit: query.limit });
    return { status: 200, json: { data } };
  },
});
