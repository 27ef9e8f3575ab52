import type { Queryable } from '@taskapi/domain';

/**
 * Every account's own cap of running tasks (`admin set-max-running`); accounts without one take
 * `ACCOUNT_MAX_RUNNING`. A partial index keeps this read small however many accounts there are.
 */
export async function accountCaps(db: Queryable): Promise<Map<string, number>> {
  const { rows } = await db.query<{ id: string; max_running: number }>({
    name: 'worker-account-caps',
    text: 'SELECT id, max_running FROM accounts WHERE max_running IS NOT NULL',
  });
  return new Map(rows.map((r) => [r.id, r.max_running]));
}
