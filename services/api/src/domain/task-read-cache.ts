import { isTerminalStatus } from '@taskapi/domain';
import type { RepairSystem } from '@taskapi/task-lifecycle';
import type { Logger } from '@taskapi/logger';
import { BoundedMap } from '../infra/bounded-map';
import type { TaskRepository, TaskRow } from '../repositories/tasks';

/**
 * A terminal row changes once more, without a status marker: the retention job empties its files
 * (`files_expired_at`). Serving it from memory for at most this long bounds how stale that can be.
 */
const TERMINAL_MAX_AGE_MS = 600_000;

interface Entry {
  accountId: string;
  row: TaskRow;
  storedAt: number;
}

export interface TaskReadCacheOptions {
  /**
   * Upper bound on serving a non-terminal row without re-reading it, for the one case the status
   * marker cannot cover: a writer that died between its commit and its marker update.
   */
  maxAgeMs?: number;
  maxEntries?: number;
}

/**
 * In-process cache of task rows for `GET /api/tasks/{id}` (clients poll it). A row is served from
 * memory when it is terminal (for `TERMINAL_MAX_AGE_MS`: only retention changes it then) or when
 * the task's status marker in Redis, fetched in the same round trip as the rate limit, still equals
 * the cached status. Anything else reads PostgreSQL. Writers record the marker after commit and before anyone is told of the
 * change, so every reader — on any replica — sees a change once its writer has reported it.
 */
export class TaskReadCache {
  private readonly entries: BoundedMap<string, Entry>;
  private readonly maxAgeMs: number;

  constructor(
    private readonly tasks: Pick<TaskRepository, 'get'>,
    private readonly markers: Pick<RepairSystem, 'seedMarker'>,
    private readonly logger: Logger,
    opts: TaskReadCacheOptions = {},
  ) {
    this.maxAgeMs = opts.maxAgeMs ?? 5_000;
    this.entries = new BoundedMap(opts.maxEntries ?? 20_000);
  }

  /**
   * The account's task, or null.
   * @param markerStatus the task's status marker as the rate-limit script returned it (null: none).
   */
  async get(accountId: string, publicId: string, markerStatus: number | null): Promise<TaskRow | null> {
    const now = Date.now();
    const cached = this.entries.get(publicId);
    if (cached && cached.accountId === accountId) {
      if (isTerminalStatus(cached.row.status) && now - cached.storedAt < TERMINAL_MAX_AGE_MS) return cached.row;
      if (markerStatus === cached.row.status && now - cached.storedAt < this.maxAgeMs) return cached.row;
    }
    const row = await this.tasks.get(accountId, publicId);
    if (!row) return null;
    this.put(accountId, row, now);
    if (markerStatus === null && !isTerminalStatus(row.status)) {
      this.markers.seedMarker(accountId, publicId, row.status).catch((err: unknown) =>
        this.logger.warn('could not seed task status marker', { public_id: publicId, error: err }),
      );
    }
    return row;
  }

  /** Stores a row this process just wrote or read. */
  put(accountId: string, row: TaskRow, now = Date.now()): void {
    this.entries.set(row.public_id, { accountId, row, storedAt: now });
  }
}
