import { waitFor } from '@taskapi/testing';
import type { TestApi } from '../../../services/api/test/support/harness';

/**
 * Reads the task through the public API until it reaches one of `statuses` (by default any
 * terminal one). Waiting for a terminal status long-polls (`Prefer: wait`), so a slow run costs a
 * request every few seconds, not twenty a second against the key's per-minute limit.
 */
export async function waitForTask(api: TestApi, apiKey: string, publicId: string, statuses = [20, 30, 40], timeoutMs = 30_000): Promise<any> {
  const terminalOnly = statuses.every((s) => s >= 20);
  const headers: Record<string, string> = { 'x-api-key': apiKey, ...(terminalOnly ? { prefer: 'wait=2' } : {}) };
  return waitFor(
    async () => {
      const res = await api.req('GET', `/api/tasks/${publicId}`, { headers });
      return statuses.includes(res.body?.status) ? res.body : undefined;
    },
    { timeoutMs, intervalMs: 50, what: `task ${publicId} to reach ${statuses.join('/')}` },
  );
}

/** Ledger rows of a task (charge and refund), straight from the database. */
export async function ledgerOf(api: TestApi, publicId: string): Promise<Array<{ entry_type: string; amount: number }>> {
  const { rows } = await api.deps.db.pool.query<{ entry_type: string; amount: number }>(
    `SELECT l.entry_type::text AS entry_type, l.amount FROM credit_ledger l JOIN tasks t ON t.id = l.task_id
      WHERE t.public_id = $1 ORDER BY l.id`,
    [publicId],
  );
  return rows;
}

/** Delivery rows of a task, straight from the database. */
export async function deliveriesOf(api: TestApi, publicId: string): Promise<Array<{ id: string; state: string; attempt_count: number }>> {
  const { rows } = await api.deps.db.pool.query<{ id: string; state: string; attempt_count: number }>(
    `SELECT d.id, d.state::text AS state, d.attempt_count FROM webhook_deliveries d JOIN tasks t ON t.id = d.task_id
      WHERE t.public_id = $1`,
    [publicId],
  );
  return rows;
}
