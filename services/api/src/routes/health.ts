import { Router } from 'express';
import { checkReadiness } from '@taskapi/service';
import type { ApiDeps } from '../deps';

/** Liveness, readiness (PostgreSQL and Redis reachable, not shutting down) and Prometheus metrics. */
export function healthRoutes(deps: ApiDeps): Router {
  const router = Router();

  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  router.get('/readyz', async (_req, res) => {
    // Shutting down: load balancers take this replica out while it still serves what they send.
    if (deps.lifecycle.draining) return void res.status(503).json({ status: 'draining' });
    const { ready, body } = await checkReadiness({ database: () => deps.db.pool.query('SELECT 1'), redis: () => deps.redis.ping() });
    res.status(ready ? 200 : 503).json(body);
  });

  router.get('/metrics', async (_req, res) => {
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });

  return router;
}
