// Accounts as the worker reads them: their own caps of running tasks (fair scheduling).
import { z } from 'zod';
import { queryRows, statement, type SqlExecutor } from '@taskapi/db';

const CAPS = statement('worker-account-caps', 'SELECT id, max_running FROM accounts WHERE max_running IS NOT NULL', z.object({ id: z.string(), max_running: z.number() }));

/**
 * Every account's own cap of running tasks (`admin set-max-running`); accounts without one take
 * `ACCOUNT_MAX_RUNNING`. A partial index keeps this read small however many accounts there are.
 */
export async function accountCaps(db: SqlExecutor): Promise<Map<string, number>> {
  return new Map((await queryRows(db, CAPS, [])).map((r) => [r.id, r.max_running]));
}
