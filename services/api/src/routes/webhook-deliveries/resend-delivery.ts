import { API_ERRORS } from '../../errors';
import { z } from 'zod';
import { resendDelivery } from '../../domain/webhook-deliveries';
import { defineRoute } from '../../http/route';
import { prefixedId } from '../../schemas/common';
import { resentWebhookDeliverySchema } from '../../schemas/console';

export const resendDeliveryRoute = defineRoute({
  operationId: 'resendWebhookDelivery',
  method: 'post',
  path: '/api/webhook-deliveries/{deliveryId}/resend',
  tag: 'Webhook deliveries',
  summary: 'Resend a webhook',
  description:
    'Sends a finished delivery (succeeded or given up) once more, now: one more attempt of the same series, with the same ' +
    '`webhook-id`. A pending delivery is refused.',
  auth: 'session',
  params: {
    schema: z.object({ deliveryId: prefixedId('delivery', 'whd_8Hs2Kd9Lq4Wm1Xn7Bv3Cz6') }),
    invalid: 'DELIVERY_NOT_FOUND',
    describe: { deliveryId: `The delivery's \`id\`. A malformed id, an unknown id and another account's delivery all give 404 \`${API_ERRORS.DELIVERY_NOT_FOUND.message}\`` },
  },
  responses: { 202: { description: 'The attempt is queued.', schema: resentWebhookDeliverySchema } },
  errors: ['DELIVERY_PENDING'],
  async handler({ params }, { deps, principal }) {
    const delivery = await resendDelivery({ deliveries: deps.repos.deliveries, webhooks: deps.webhooks, logger: deps.logger }, principal.accountId, params.deliveryId);
    return { status: 202, json: { delivery } };
  },
});
