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
