import { Router, type RequestHandler } from 'express';
import type { ApiDeps } from '../deps';
import { sessionPrincipal } from '../http/request-context';
import { listGrants } from '../domain/trial-grants';
import { getWebhookSecret, rotateWebhookSecret } from '../domain/webhook-secret';

/** Session endpoints about the account: balance, trial grants, webhook secret. */
export function accountRoutes(deps: ApiDeps, requireSession: RequestHandler): Router {
  const { prisma } = deps.db;
  const { secretsKey } = deps.config;
  const router = Router();

  router.get('/credits/balance', requireSession, async (_req, res) => {
    const accountId = sessionPrincipal(res).accountId;
    const [account, grants] = await Promise.all([
      prisma.account.findUniqueOrThrow({ where: { id: accountId }, select: { paidBalance: true } }),
      listGrants(prisma, accountId),
    ]);
    res.json({ paid_balance: account.paidBalance, trial_grants: grants });
  });

  router.get('/trial-grants', requireSession, async (_req, res) => {
    res.json({ data: await listGrants(prisma, sessionPrincipal(res).accountId) });
  });

  router.get('/webhook-secret', requireSession, async (_req, res) => {
    res.json(await getWebhookSecret(prisma, secretsKey, sessionPrincipal(res).accountId));
  });

  router.post('/webhook-secret/rotate', requireSession, async (_req, res) => {
    res.json(await rotateWebhookSecret(prisma, secretsKey, sessionPrincipal(res).accountId));
  });

  return router;
}
