// The operational endpoints: `GET /healthz` and `GET /readyz` (routes/health.ts).
import { z } from 'zod';

const checkState = z.enum(['ok', 'unavailable']);

export const healthSchema = z.object({ status: z.literal('ok') }).meta({ id: 'Health' });

export type HealthView = z.infer<typeof healthSchema>;

export const drainingSchema = z
  .object({ status: z.enum(['draining']) })
  .meta({ id: 'Draining', description: 'Readiness while the API shuts down: load balancers should stop sending.' });

export type DrainingView = z.infer<typeof drainingSchema>;

export const readinessSchema = z
  .object({
    status: z.enum(['ready', 'not_ready']),
    checks: z.object({ database: checkState, redis: checkState, storage: checkState }),
    problems: z
      .record(z.string(), z.string())
      .optional()
      .meta({ description: 'For a failing check, what is wrong when the API can say (e.g. which Redis Sentinel said what).' }),
  })
  .meta({ id: 'Readiness' });

export type ReadinessView = z.infer<typeof readinessSchema>;
