// The console's usage report: per UTC day, the tasks created by kind, what became of them, the
// credits they cost net of refunds, and the failure rate. The database returns one row per day,
// kind and status that has tasks; this fills in every other day with zeros.
import { TaskStatus } from '@taskapi/domain';
import { TASK_KINDS, type TaskKind } from '@taskapi/task-kinds';
import type { TaskRepository, UsageRow } from '../repositories/tasks';
import type { UsageDayView, UsageReportView } from '../schemas/usage';

const DAY_MS = 86_400_000;

type Figures = Omit<UsageDayView, 'date'>;

function emptyFigures(): Figures {
  const byKind = Object.fromEntries(TASK_KINDS.map((k) => [k, 0])) as Record<TaskKind, number>;
  return { created: 0, by_kind: byKind, completed: 0, failed: 0, cancelled: 0, in_progress: 0, credits_spent: 0, failure_rate: null };
}

function add(figures: Figures, row: UsageRow): void {
  figures.created += row.tasks;
  figures.by_kind[row.kind] += row.tasks;
  // Failed and cancelled tasks are refunded in full, in the same statement that ends them
  // (finish-task.ts, cancel-task.ts): their charge and refund cancel out.
  if (row.status === TaskStatus.failed) figures.failed += row.tasks;
  else if (row.status === TaskStatus.cancelled) figures.cancelled += row.tasks;
  else {
    figures.credits_spent += row.cost;
    if (row.status === TaskStatus.completed) figures.completed += row.tasks;
    else figures.in_progress += row.tasks;
  }
}

function withRate(figures: Figures): Figures {
  const finished = figures.completed + figures.failed;
  return { ...figures, failure_rate: finished === 0 ? null : Math.round((figures.failed / finished) * 10_000) / 10_000 };
}

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

/** The account's usage over the `days` UTC days ending today (`now`), oldest first. */
export async function usageReport(tasks: Pick<TaskRepository, 'usageSince'>, accountId: string, days: number, now = new Date()): Promise<UsageReportView> {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const from = today - (days - 1) * DAY_MS;
  const perDay = Array.from({ length: days }, emptyFigures);
  const totals = emptyFigures();
  for (const row of await tasks.usageSince(accountId, new Date(from))) {
    const index = Math.floor((row.day.getTime() - from) / DAY_MS);
    // A task stamped after `now` (clocks of the API and the database a moment apart) is left out.
    if (index < 0 || index >= days) continue;
    add(perDay[index] as Figures, row);
    add(totals, row);
  }
  return {
    days,
    from: isoDay(from),
    to: isoDay(today),
    data: perDay.map((figures, i) => ({ date: isoDay(from + i * DAY_MS), ...withRate(figures) })),
    totals: withRate(totals),
  };
}
