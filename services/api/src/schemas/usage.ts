// The console's usage report (`GET /api/console/usage`): the account's tasks per UTC day, by kind
// and by the state they are in now, and the credits they cost net of refunds.
import { z } from 'zod';
import { TASK_KINDS, type TaskKind } from '@taskapi/task-kinds';

/** Longest window the report covers, in days. */
export const MAX_USAGE_DAYS = 90;
export const DEFAULT_USAGE_DAYS = 30;

const DAYS_ERROR = { error: `must be an integer from 1 to ${MAX_USAGE_DAYS}` };

/** `GET /api/console/usage` query. */
export const usageQuerySchema = z.strictObject({
  days: z
    .string()
    .regex(/^\d{1,3}$/, DAYS_ERROR)
    // A query parameter arrives as a string; for `io: 'input'` document it as the integer it must spell.
    .meta({ type: 'integer', minimum: 1, maximum: MAX_USAGE_DAYS, default: DEFAULT_USAGE_DAYS })
    .transform(Number)
    .pipe(z.number().int().min(1, DAYS_ERROR).max(MAX_USAGE_DAYS, DAYS_ERROR))
    .default(DEFAULT_USAGE_DAYS)
    .meta({ description: 'How many UTC days to cover, ending today (today included).' }),
});

export type UsageQuery = z.infer<typeof usageQuerySchema>;

const count = (description: string, example: number) => z.int().min(0).meta({ description, example });

const byKindSchema = z
  .object(Object.fromEntries(TASK_KINDS.map((k) => [k, z.int().min(0)])) as Record<TaskKind, z.ZodInt>)
  .meta({ id: 'UsageByKind', description: 'Tasks created, per kind (every kind present, 0 when none).', example: { 'video-generation': 4, 'image-generation': 31, 'face-detection': 12 } });

const usageFigures = {
  created: count('Tasks created.', 47),
  by_kind: byKindSchema,
  completed: count('Of those, completed (status 20).', 41),
  failed: count('Of those, failed (status 30).', 3),
  cancelled: count('Of those, cancelled (status 40).', 1),
  in_progress: count('Of those, still queued or processing.', 2),
  credits_spent: count(
    'Credits charged for those tasks, net of refunds: failed and cancelled tasks are refunded in full, so only completed and unfinished tasks count.',
    134,
  ),
  failure_rate: z.number().min(0).max(1).nullable().meta({
    description: 'failed / (completed + failed), rounded to 4 decimals; null when none has finished either way. Cancelled tasks are not failures.',
    example: 0.0682,
  }),
};

export const usageDaySchema = z
  .object({ date: z.iso.date().meta({ description: 'The UTC day the tasks were created.', example: '2026-11-23' }), ...usageFigures })
  .meta({ id: 'UsageDay', description: "The tasks created on one UTC day, in the state they are in now." });

export type UsageDayView = z.infer<typeof usageDaySchema>;

export const usageReportSchema = z
  .object({
    days: z.int().min(1).max(MAX_USAGE_DAYS).meta({ example: DEFAULT_USAGE_DAYS }),
    from: z.iso.date().meta({ description: 'First UTC day covered.', example: '2026-10-25' }),
    to: z.iso.date().meta({ description: 'Last UTC day covered: today.', example: '2026-11-23' }),
    data: z.array(usageDaySchema).meta({ description: 'One entry per day from `from` to `to`, oldest first; days without tasks are present with zeros.' }),
    totals: z.object(usageFigures).meta({ description: 'The same figures over the whole window.' }),
  })
  .meta({ id: 'UsageReport' });

export type UsageReportView = z.infer<typeof usageReportSchema>;

// ---- The usage export (`GET /api/usage`): figures per UTC day, per kind or per key over a range of days ----

/** What `GET /api/usage` groups by. */
export const USAGE_GROUPS = ['day', 'kind', 'key'] as const;
export type UsageGroup = (typeof USAGE_GROUPS)[number];

/** Longest range of the export, in days (both ends included): a leap year. */
export const MAX_EXPORT_DAYS = 366;

const DAY_MS = 86_400_000;
const DATE_ERROR = { error: (issue: { input: unknown }) => (issue.input === undefined ? 'is required' : 'must be a date as YYYY-MM-DD') };
const isoDate = z.iso.date();

/** `GET /api/usage` query. */
export const usageExportQuerySchema = z
  .strictObject({
    from: z.iso.date(DATE_ERROR).meta({ description: 'First UTC day of the range (`YYYY-MM-DD`), included.', example: '2026-11-01' }),
    to: z.iso.date(DATE_ERROR).meta({ description: `Last UTC day of the range, included: not before \`from\`, at most ${MAX_EXPORT_DAYS} days in all.`, example: '2026-11-30' }),
    group_by: z.enum(USAGE_GROUPS).default('day').meta({
      description: '`day`: one row per UTC day of the range (zeros when idle); `kind`: one row per task kind; `key`: one row per API key that created tasks in the range.',
    }),
  })
  .superRefine((q, ctx) => {
    // Only two real dates make a range (zod runs this check even when a field failed its own).
    if (!isoDate.safeParse(q.from).success || !isoDate.safeParse(q.to).success) return;
    const days = (Date.parse(q.to) - Date.parse(q.from)) / DAY_MS + 1;
    if (days < 1) ctx.addIssue({ code: 'custom', path: ['to'], message: 'must not be before from' });
    else if (days > MAX_EXPORT_DAYS) ctx.addIssue({ code: 'custom', path: ['to'], message: `must be at most ${MAX_EXPORT_DAYS - 1} days after from (a range of at most ${MAX_EXPORT_DAYS} days)` });
  });

export type UsageExportQuery = z.infer<typeof usageExportQuerySchema>;

const exportFigures = {
  tasks: count('Tasks created.', 47),
  completed: count('Of those, completed (status 20).', 41),
  failed: count('Of those, failed (status 30): refunded in full.', 3),
  cancelled: count('Of those, cancelled (status 40): refunded in full.', 1),
  credits: count(
    'Net credits charged for those tasks (paid balance and trial quota alike): their charges less their refunds. Failed and cancelled ' +
      'tasks are refunded in full, so only completed tasks and tasks still queued or processing count; a task that fails later drops out.',
    134,
  ),
};

export const usageByDaySchema = z
  .object({ date: z.iso.date().meta({ description: 'The UTC day the tasks were created.', example: '2026-11-23' }), ...exportFigures })
  .meta({ id: 'UsageOfDay', description: 'The tasks created on one UTC day, in the state they are in now.' });

export const usageByKindSchema = z
  .object({ kind: z.enum(TASK_KINDS).meta({ example: 'image-generation' }), ...exportFigures })
  .meta({ id: 'UsageOfKind', description: 'The tasks of one kind created in the range, in the state they are in now.' });

export const usageByKeySchema = z
  .object({ key_prefix: z.string().meta({ description: 'The prefix of the key that created the tasks (revoked keys included).', example: 'sk-live-Ab12Cd34' }), ...exportFigures })
  .meta({ id: 'UsageOfKey', description: 'The tasks one API key created in the range, in the state they are in now.' });

export type UsageExportRow = z.infer<typeof usageByDaySchema> | z.infer<typeof usageByKindSchema> | z.infer<typeof usageByKeySchema>;

export const usageExportSchema = z
  .object({
    data: z.array(z.union([usageByDaySchema, usageByKindSchema, usageByKeySchema])).meta({
      description:
        '`day`: every day from `from` to `to`, oldest first; `kind`: every kind, in the API\'s order; `key`: the keys that created tasks in the range, by prefix.',
    }),
  })
  .meta({ id: 'UsageExport' });
