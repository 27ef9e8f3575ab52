// Shared by the two task lists: `/api/tasks` (API key) and `/api/console/tasks` (session).
import { z } from 'zod';
import { TASK_STATUSES } from '@taskapi/domain';
import { FAIRNESS_KEY, TASK_KINDS } from '@taskapi/task-kinds';
import { isId } from '@taskapi/ids';
import type { ApiDeps } from '../../deps';
import { listTasks } from '../../domain/task-queries';
import { renderTask, routeFileUrls } from '../../domain/task-view';

const ONE_TO_HUNDRED = 'must be an integer from 1 to 100';

export const listTasksQuerySchema = z.strictObject({
  status: z
    .string({ error: 'must be given once' })
    .transform((s, ctx) => {
      const values = s.split(',').map((v) => Number(v.trim()));
      if (values.some((v) => !(TASK_STATUSES as readonly number[]).includes(v))) {
        ctx.addIssue({ code: 'custom', message: `must be one or more of ${TASK_STATUSES.join(', ')}, comma-separated` });
        return z.NEVER;
      }
      return [...new Set(values)];
    })
    .optional()
    .meta({ description: 'Only tasks with these statuses: one or more of `0`, `10`, `20`, `30`, `40`, comma-separated (e.g. `0,10`).', example: '20,30' }),
  kind: z
    .enum(TASK_KINDS, { error: `must be one of ${TASK_KINDS.join(', ')}` })
    .optional()
    .meta({ description: 'Only tasks of this kind.' }),
  fairness_key: z
    .string({ error: 'must be given once' })
    .regex(FAIRNESS_KEY, { error: 'must be 1 to 64 characters from A-Z a-z 0-9 . _ : @ -' })
    .optional()
    .meta({ description: 'Only tasks created with this `fairness_key`.', example: 'user-42' }),
  limit: z
    .string({ error: 'must be given once' })
    .regex(/^\d{1,3}$/, { error: ONE_TO_HUNDRED })
    .transform(Number)
    .pipe(z.number().min(1, { error: ONE_TO_HUNDRED }).max(100, { error: ONE_TO_HUNDRED }))
    .optional()
    .meta({ description: 'Page size, 1 to 100 (default 20).', example: '20' }),
  cursor: z
    .string({ error: 'must be given once' })
    .refine((c) => isId('task', c), { error: 'must be a next_cursor value from a previous page' })
    .optional()
    .meta({ description: '`next_cursor` of the previous page.' }),
});

export const TASK_LIST_INVALID_EXAMPLES = [
  ['status has a value outside 0,10,20,30,40', 'status', 'must be one or more of 0, 10, 20, 30, 40, comma-separated'],
  ['kind is not a task kind', 'kind', `must be one of ${TASK_KINDS.join(', ')}`],
  ['fairness_key with a character keys cannot hold', 'fairness_key', 'must be 1 to 64 characters from A-Z a-z 0-9 . _ : @ -'],
  ['limit out of range', 'limit', ONE_TO_HUNDRED],
  ['A query parameter given twice', 'limit', 'must be given once'],
  ['An unknown query parameter', 'page', 'is not a known field'],
] as const;

/**
 * One page of the account's tasks as `{"data":[task...],"next_cursor"}`; file URLs signed
 * (`files[].url` of the task API), or under the console's `filesRoot` when given.
 */
export async function renderTaskList(deps: ApiDeps, accountId: string, q: z.output<typeof listTasksQuerySchema>, filesRoot?: string): Promise<string> {
  const { rows, nextCursor } = await listTasks(deps.repos.tasks, accountId, { statuses: q.status, kind: q.kind, fairnessKey: q.fairness_key, limit: q.limit ?? 20, cursor: q.cursor });
  const [urlOf, tasks] = await Promise.all([
    filesRoot ? routeFileUrls(deps.config.publicBaseUrl, filesRoot) : deps.fileLinks.forRows(rows),
    deps.taskReader.withProgress(accountId, rows),
  ]);
  return `{"data":[${tasks.map((t) => renderTask(t.row, urlOf, t.progress, t.queue)).join(',')}],"next_cursor":${JSON.stringify(nextCursor)}}`;
}
