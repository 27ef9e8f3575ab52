// After the chaos window: every client has its answer, then the system gets a deadline to finish
// what it owes (every task terminal, every delivery settled) before the audit looks.
import { setTimeout as delay } from 'node:timers/promises';
import type pg from 'pg';

export interface Backlog {
  unfinishedTasks: number;
  pendingDeliveries: number;
}

async function backlog(db: pg.Pool): Promise<Backlog | undefined> {
  try {
    const { rows } = await db.query<{ tasks: string; deliveries: string }>(
      `SELECT (SELECT count(*) FROM tasks WHERE status IN (0, 10))::text AS tasks,
              (SELECT count(*) FROM webhook_deliveries WHERE state = 'pending')::text AS deliveries`,
    );
    return { unfinishedTasks: Number(rows[0]?.tasks), pendingDeliveries: Number(rows[0]?.deliveries) };
  } catch {
    return undefined; // PostgreSQL may still be recovering from the last restart
  }
}

/** Resolves true once nothing is left to do, false at the deadline; reports progress every 10 s. */
export async function settle(db: pg.Pool, timeoutMs: number, report: (line: string) => void): Promise<boolean> {
  const started = Date.now();
  let lastReport = started;
  for (;;) {
    const left = await backlog(db);
    if (left && left.unfinishedTasks === 0 && left.pendingDeliveries === 0) {
      report(`settled in ${((Date.now() - started) / 1000).toFixed(1)} s`);
      return true;
    }
    if (Date.now() - started > timeoutMs) {
      report(`not settled after ${timeoutMs / 1000} s: ${left ? `${left.unfinishedTasks} tasks unfinished, ${left.pendingDeliveries} deliveries pending` : 'database unreachable'}`);
      return false;
    }
    if (Date.now() - lastReport >= 10_000) {
      lastReport = Date.now();
      report(left ? `waiting: ${left.unfinishedTasks} tasks unfinished, ${left.pendingDeliveries} deliveries pending` : 'waiting: database unreachable');
    }
    await delay(500);
  }
}
