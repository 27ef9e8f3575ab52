import type { AccountQueue, TaskScheduler } from '@taskapi/scheduler';
import { TASK_KINDS, type TaskKind } from '@taskapi/task-kinds';
import type { AccountRepository } from '../repositories/accounts';

/** One account's line of one kind, as operators see it. */
export interface AccountLine {
  account_id: string;
  email: string | null;
  running: number;
  waiting: number;
  /** Of its waiting tasks of the kind, those its cap (on all its kinds together) holds back now. */
  held_by_cap: number;
}

/** `npm run admin -- queues`: per kind, what runs and what waits, by account, most waiting first. */
export interface QueueReport {
  kinds: Partial<Record<TaskKind, { running: number; waiting: number; accounts: AccountLine[] }>>;
}

/** How many of an account's waiting tasks of a kind its cap holds back: all of them at the cap, else those beyond its room. */
export function heldByCap(a: AccountQueue): number {
  return Math.max(0, a.waiting - Math.max(0, a.cap - a.runningAllKinds));
}

/** The report of `kinds` (every kind by default), from the scheduler's lines and the accounts' e-mails. */
export async function queueReport(
  scheduler: Pick<TaskScheduler, 'accountsOf'>,
  accounts: Pick<AccountRepository, 'emailsOf'>,
  kinds: readonly TaskKind[] = TASK_KINDS,
): Promise<QueueReport> {
  const report: QueueReport = { kinds: {} };
  const byKind = await Promise.all(kinds.map(async (kind) => [kind, await scheduler.accountsOf(kind)] as const));
  const emails = await accounts.emailsOf([...new Set(byKind.flatMap(([, rows]) => rows.map((r) => r.accountId)))]);
  for (const [kind, rows] of byKind) {
    const lines = rows
      .map((r): AccountLine => ({ account_id: r.accountId, email: emails.get(r.accountId) ?? null, running: r.running, waiting: r.waiting, held_by_cap: heldByCap(r) }))
      .sort((a, b) => b.waiting - a.waiting || b.running - a.running || a.account_id.localeCompare(b.account_id));
    report.kinds[kind] = { running: lines.reduce((n, l) => n + l.running, 0), waiting: lines.reduce((n, l) => n + l.waiting, 0), accounts: lines };
  }
  return report;
}
