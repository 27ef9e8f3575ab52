// Usage: the one query behind `GET /api/usage` (the export, JSON or CSV) and the console's charts
// (`GET /api/console/usage`), and the two shapes made from its rows. The database returns one row
// per kind and status (and UTC day, and key, when asked) that has tasks; this module adds them up
// and fills in idle days with zeros. What the figures mean: docs/api.md, "Usage".
import { TaskStatus } from '@taskapi/domain';
import { TASK_KINDS, type TaskKind } from '@taskapi/task-kinds';
import type { TaskRepository, UsageGrain, UsageRow } from '../repositories/tasks';
import type { UsageDayView, UsageExportQuery, UsageExportRow, UsageReportView } from '../schemas/usage';

const DAY_MS = 86_400_000;

const isoDay = (ms: number) => new Date(ms).toISOString().slice(0, 10);

type UsageSource = Pick<TaskRepository, 'usage'>;

/**
 * The account's usage rows for the UTC days `fromDay` to `toDay` (midnights, ms), both included:
 * the only place either shape reads tasks from.
 */
function usageRows(tasks: UsageSource, accountId: string, fromDay: number, toDay: number, grain: UsageGrain): Promise<UsageRow[]> {
  return tasks.usage(accountId, new Date(fromDay), new Date(toDay + DAY_MS), grain);
}

/**
 * Net credits of a row: failed and cancelled tasks are refunded in full in the statement that ends
 * them (the lifecycle's terminal statement, stores/task-rows.ts), so their charge and refund cancel out; completed tasks and
 * those still queued or processing keep their charge.
 */
const netCredits = (row: UsageRow) => (row.status === TaskStatus.failed || row.status === TaskStatus.cancelled ? 0 : row.cost);

// ---- The export ----

type ExportFigures = { tasks: number; completed: number; failed: number; cancelled: number; credits: number };

const noFigures = (): ExportFigures => ({ tasks: 0, completed: 0, failed: 0, cancelled: 0, credits: 0 });

function addToExport(figures: ExportFigures, row: UsageRow): void {
  figures.tasks += row.tasks;
  if (row.status === TaskStatus.completed) figures.completed += row.tasks;
  else if (row.status === TaskStatus.failed) figures.failed += row.tasks;
  else if (row.status === TaskStatus.cancelled) figures.cancelled += row.tasks;
  figures.credits += netCredits(row);
}

/**
 * `GET /api/usage`: the account's tasks created from `from` to `to` (UTC days, both included),
 * per day (every day present), per kind (every kind present) or per key (the keys that created
 * tasks in the range, by prefix).
 */
export async function usageExport(tasks: UsageSource, accountId: string, query: UsageExportQuery): Promise<UsageExportRow[]> {
  const fromDay = Date.parse(query.from);
  const toDay = Date.parse(query.to);
  const rows = await usageRows(tasks, accountId, fromDay, toDay, { byDay: query.group_by === 'day', byKey: query.group_by === 'key' });
  switch (query.group_by) {
    case 'day': {
      const perDay = Array.from({ length: (toDay - fromDay) / DAY_MS + 1 }, noFigures);
      for (const row of rows) {
        const figures = perDay[Math.round((row.day!.getTime() - fromDay) / DAY_MS)];
        if (figures) addToExport(figures, row);
      }
      return perDay.map((figures, i) => ({ date: isoDay(fromDay + i * DAY_MS), ...figures }));
    }
    case 'kind': {
      const perKind = new Map<TaskKind, ExportFigures>(TASK_KINDS.map((k) => [k, noFigures()]));
      for (const row of rows) addToExport(perKind.get(row.kind)!, row);
      return [...perKind].map(([kind, figures]) => ({ kind, ...figures }));
    }
    case 'key': {
      const perKey = new Map<string, ExportFigures>();
      for (const row of rows) {
        const prefix = row.key_prefix!;
        let figures = perKey.get(prefix);
        if (!figures) perKey.set(prefix, (figures = noFigures()));
        addToExport(figures, row);
      }
      return [...perKey].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([key_prefix, figures]) => ({ key_prefix, ...figures }));
    }
  }
}

/** The column order of the CSV export: the grouping column, then the figures. */
export const USAGE_CSV_COLUMNS = ['tasks', 'completed', 'failed', 'cancelled', 'credits'] as const;

// ---- The console's report ----

type Figures = Omit<UsageDayView, 'date'>;

function emptyFigures(): Figures {
  const byKind = Object.fromEntries(TASK_KINDS.map((k) => [k, 0])) as Record<TaskKind, number>;
  return { created: 0, by_kind: byKind, completed: 0, failed: 0, cancelled: 0, in_progress: 0, credits_spent: 0, failure_rate: null };
}

function addToReport(figures: Figures, row: UsageRow): void {
  figures.created += row.tasks;
  figures.by_kind[row.kind] += row.tasks;
  figures.credits_spent += netCredits(row);
  if (row.status === TaskStatus.failed) figures.failed += row.tasks;
  else if (row.status === TaskStatus.cancelled) figures.cancelled += row.tasks;
  else if (row.status === TaskStatus.completed) figures.completed += row.tasks;
  else figures.in_progress += row.tasks;
}

function withRate(figures: Figures): Figures {
  const finished = figures.completed + figures.failed;
  return { ...figures, failure_rate: finished === 0 ? null : Math.round((figures.failed / finished) * 10_000) / 10_000 };
}

/** The console's charts: the account's usage over the `days` UTC days ending today (`now`), oldest first. */
export async function usageReport(tasks: UsageSource, accountId: string, days: number, now = new Date()): Promise<UsageReportView> {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const from = today - (days - 1) * DAY_MS;
  const perDay = Array.from({ length: days }, emptyFigures);
  const totals = emptyFigures();
  for (const row of await usageRows(tasks, accountId, from, today, { byDay: true, byKey: false })) {
    const figures = perDay[Math.round((row.day!.getTime() - from) / DAY_MS)];
    if (!figures) continue;
    addToReport(figures, row);
    addToReport(totals, row);
  }
  return {
    days,
    from: isoDay(from),
    to: isoDay(today),
    data: perDay.map((figures, i) => ({ date: isoDay(from + i * DAY_MS), ...withRate(figures) })),
    totals: withRate(totals),
  };
}
