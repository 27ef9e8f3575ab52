import express, { Router, type Response } from 'express';
import { z } from 'zod';
import { isId } from '@taskapi/ids';
import type { ApiDeps } from '../deps';
import { ApiError } from '../errors';
import { sessionPrincipal } from '../http/request-context';
import { parseOrThrow } from '../http/validation';
import { createKey, listKeys, reissueKey, revealKey, revokeKey, type ApiKeyDeps } from '../domain/api-keys';

const createKeySchema = z.discriminatedUnion(
  'type',
  [
    z.strictObject({ type: z.literal('paid') }),
    z.strictObject({
      type: z.literal('trial'),
      grant_id: z.string({ error: 'is required for trial keys' }).refine((v) => isId('grant', v), { error: 'is not a trial grant id' }),
    }),
  ],
  { error: 'must be "paid" or "trial"' },
);

const listSchema = z.strictObject({ type: z.enum(['paid', 'trial'], { error: 'must be "paid" or "trial"' }).optional() });

function keyIdParam(value: string | undefined): string {
  if (!value || !isId('key', value)) throw new ApiError('KEY_NOT_FOUND');
  return value;
}

function accountOf(res: Response): string {
  return sessionPrincipal(res).accountId;
}

/** `/api/keys`: the console's key management (session only; API keys are refused). */
export function keyRoutes(deps: ApiDeps, requireSession: express.RequestHandler): Router {
  const keyDeps: ApiKeyDeps = { prisma: deps.db.prisma, redis: deps.redis, secretsKey: deps.config.secretsKey, logger: deps.logger };
  const router = Router();
  router.use(requireSession);

  router.get('/', async (req, res) => {
    const q = parseOrThrow(listSchema, req.query, 'Query');
    res.json({ data: await listKeys(deps.db.prisma, accountOf(res), q.type) });
  });

  router.post('/', express.json({ limit: '16kb' }), async (req, res) => {
    const body = parseOrThrow(createKeySchema, req.body);
    const created = await createKey(keyDeps, accountOf(res), body);
    res.status(201).json(created);
  });

  router.post('/:keyId/revoke', async (req, res) => {
    res.json(await revokeKey(keyDeps, accountOf(res), keyIdParam(req.params.keyId)));
  });

  router.post('/:keyId/reissue', async (req, res) => {
    res.status(201).json(await reissueKey(keyDeps, accountOf(res), keyIdParam(req.params.keyId)));
  });

  router.post('/:keyId/reveal', async (req, res) => {
    const revealed = await revealKey(keyDeps, accountOf(res), keyIdParam(req.params.keyId), {
      ip: req.ip,
      userAgent: req.get('user-agent'),
    });
    res.json(revealed);
  });

  return router;
}
