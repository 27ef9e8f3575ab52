import { waitFor } from '@taskapi/testing';
import type { TestApi } from '../../../services/api/test/support/harness';

/** Polls the public API until the task reaches one of `statuses` (by default any terminal one). */
export async function waitForTask(api: TestApi, apiKey: string, publicId: string, statuses = [20, 30, 40], timeoutMs = 30_000): Promise<any> {
  return waitFor(
    async () => {
      const res = await api.req('GET', `/api/tasks/${publicId}`, { headers: { 'x-api-key': apiKey } });
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
