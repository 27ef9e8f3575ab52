// `/health-check` as coglet answers it (crates/coglet/src/health.rs, HealthCheckResponse in
// routes.rs): always 200, the state in `status`; BUSY is READY with every slot taken; UNHEALTHY is a
// failed user healthcheck, shown with `user_healthcheck_error`. A test may force any status.
import { COGLET_VERSION } from './webhook-sender';

export const HEALTH_STATUSES = ['UNKNOWN', 'STARTING', 'READY', 'BUSY', 'SETUP_FAILED', 'DEFUNCT', 'UNHEALTHY'] as const;
export type HealthStatus = (typeof HEALTH_STATUSES)[number];

/** The `setup` object: `completed_at` once done; `logs` only when setup wrote any (coglet omits it when empty). */
interface SetupResult {
  started_at: string;
  completed_at?: string;
  status: 'starting' | 'succeeded' | 'failed';
  logs?: string;
}

export interface HealthCheckBody {
  status: HealthStatus;
  setup: SetupResult;
  version: { coglet: string };
  user_healthcheck_error?: string;
}

/** Whether a new prediction may start: coglet's NotReady (503) and AtCapacity (409). */
export type Admission = 'ready' | 'not-ready' | 'at-capacity';

// chrono's to_rfc3339(): an offset, not `Z`.
const timestamp = (): string => new Date().toISOString().replace('Z', '+00:00');

export class HealthState {
  private state: 'STARTING' | 'READY' | 'SETUP_FAILED' = 'STARTING';
  private setup: SetupResult = { started_at: timestamp(), status: 'starting' };
  private forced: HealthStatus | null = null;

  setupDone(outcome: 'succeeded' | 'failed', logs: string): void {
    this.state = outcome === 'succeeded' ? 'READY' : 'SETUP_FAILED';
    this.setup = { ...this.setup, completed_at: timestamp(), status: outcome, ...(logs ? { logs } : {}) };
  }

  /** Forces the reported status (a test control), or back to the real one with null. */
  force(status: HealthStatus | null): void {
    this.forced = status;
  }

  /**
   * Whether a prediction may start with `freeSlots` slots free. A forced UNHEALTHY changes nothing
   * (coglet keeps taking predictions while its user healthcheck fails); a forced BUSY refuses like
   * a full server (409), every other forced status but READY like one that is not ready (503).
   */
  admission(freeSlots: number): Admission {
    const state = this.forced === null || this.forced === 'UNHEALTHY' ? this.state : this.forced;
    if (state === 'BUSY') return 'at-capacity';
    if (state !== 'READY') return 'not-ready';
    return freeSlots > 0 ? 'ready' : 'at-capacity';
  }

  body(freeSlots: number): HealthCheckBody {
    const body: HealthCheckBody = { status: this.state, setup: this.setup, version: { coglet: COGLET_VERSION } };
    if (this.forced === 'UNHEALTHY') {
      body.status = 'UNHEALTHY';
      body.user_healthcheck_error = 'Healthcheck failed: user-defined healthcheck returned False';
    } else if (this.forced !== null) {
      body.status = this.forced;
    } else if (this.state === 'READY' && freeSlots === 0) {
      body.status = 'BUSY';
    }
    return body;
  }
}
