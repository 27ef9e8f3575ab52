import { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import { isId } from '@taskapi/ids';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { sessionPrincipal } from '../http/request-context';
import { parseOrThrow } from '../http/validation';
import { listDeliveries, resendDelivery } from '../domain/webhook-deliveries';

const listSchema = z.strictObject({
  public_id: z.string().max(64, { error: 'must be a task id' }).optional(),
  limit: z
    .string()
    .regex(/^\d+$/, { error: 'must be an integer from 1 to 100' })
    .transform(Number)
    .pipe(z.number().int().min(1, { error: 'must be an integer from 1 to 100' }).max(100, { error: 'must be an integer from 1 to 100' }))
    .default(20),
});

/** `/api/webhook-deliveries`: the delivery log with every attempt, and manual resend (session only). */
export function webhookDeliveryRoutes(deps: ApiDeps, requireSession: RequestHandler): Router {
  const router = Router();
  router.use(requireSession);

  router.get('/', async (req, res) => {
    const q = parseOrThrow(listSchema, req.query, 'Query');
    const data = await listDeliveries(deps.db.pool, sessionPrincipal(res).accountId, { publicId: q.public_id, limit: q.limit });
    res.json({ data });
  });

  router.post('/:deliveryId/resend', async (req, res) => {
    const id = req.params.deliveryId;
    if (!id || !isId('delivery', id)) throw new ApiError('DELIVERY_NOT_FOUND');
    const delivery = await resendDelivery({ pool: deps.db.pool, webhooks: deps.webhooks, logger: deps.logger }, sessionPrincipal(res).accountId, id);
    res.status(202).json({ delivery });
  });

  return router;
}
