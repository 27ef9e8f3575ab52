import { Router } from 'express';
import type { ApiDeps } from '../deps';

/** Liveness, readiness (PostgreSQL and Redis reachable) and Prometheus metrics. */
export function healthRoutes(deps: ApiDeps): Router {
  const router = Router();

  router.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });

  router.get('/readyz', async (_req, res) => {
    const timeout = <T>(p: Promise<T>) =>
      Promise.race([p, new Promise<never>((_, reject) => setTimeout(() => reject(new Error('timeout')), 2_000).unref())]);
    const [database, redis] = await Promise.allSettled([timeout(deps.db.pool.query('SELECT 1')), timeout(deps.redis.ping())]);
    const checks = { database: database.status === 'fulfilled' ? 'ok' : 'unavailable', redis: redis.status === 'fulfilled' ? 'ok' : 'unavailable' };
    const ready = checks.database === 'ok' && checks.redis === 'ok';
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not_ready', checks });
  });

  router.get('/metrics', async (_req, res) => {
    res.type(deps.metrics.registry.contentType).send(await deps.metrics.registry.metrics());
  });

  return router;
}
