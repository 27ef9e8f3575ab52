import { Gauge, type Registry } from 'prom-client';
import { checkReadiness, type Readiness } from './readiness';

/** A process's name in the readiness metrics' `service` label. */
export type ServiceName = 'api' | 'worker' | 'webhook-dispatcher';

/**
 * Registers on `registry` the readiness of this process as Prometheus gauges, from the checks its
 * `/readyz` runs:
 * - `taskapi_ready{service}`: 1 when every check passes, else 0;
 * - `taskapi_backend_up{service,backend}`: 1 or 0 per check, `backend` being the check's name as
 *   `/readyz` reports it (`database`, `redis`, `storage`, a worker's `model_<kind>`).
 *
 * The checks run at each scrape (one run feeds both gauges, each check bounded by the 2 s of
 * `checkReadiness`), so the gauges do not depend on a probe calling `/readyz` and a scrape sees
 * the backends as they are now, not as the last probe saw them.
 */
export function registerReadinessMetrics(registry: Registry, service: ServiceName, checks: Record<string, () => Promise<unknown>>): void {
  let pending: Promise<Readiness> | undefined;
  // Both gauges collect in the same scrape: they share one run of the checks.
  const current = () => {
    pending ??= checkReadiness(checks).finally(() => {
      pending = undefined;
    });
    return pending;
  };
  const ready = new Gauge({
    name: 'taskapi_ready',
    help: 'Whether every readiness check of this process passes (1) or not (0), checked at scrape time; the checks of GET /readyz',
    labelNames: ['service'],
    registers: [registry],
    async collect() {
      ready.set({ service }, (await current()).ready ? 1 : 0);
    },
  });
  const up = new Gauge({
    name: 'taskapi_backend_up',
    help: 'Whether each backend this process depends on answers its readiness check (1) or not (0), checked at scrape time; backend = the check name of GET /readyz',
    labelNames: ['service', 'backend'],
    registers: [registry],
    async collect() {
      const { body } = await current();
      for (const [backend, state] of Object.entries(body.checks)) up.set({ service, backend }, state === 'ok' ? 1 : 0);
    },
  });
}
