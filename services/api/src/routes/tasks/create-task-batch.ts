import { z } from 'zod';
import { creationTraceParent, traceIdOf } from '@taskapi/telemetry';
import { TASK_KIND_CATALOG, type TaskKind } from '@taskapi/task-kinds';
import { requestFingerprint, scheduledTask, type BatchItem, type IdempotencyRequest } from '../../domain/create-task';
import { rateLimitHeader } from '../../domain/rate-limit';
import { draftTask } from '../../domain/task-input';
import { topLevelArrayElementTexts } from '../../domain/json-member-text';
import { renderTask, type TaskQueue } from '../../domain/task-view';
import { ApiError } from '../../errors';
import { locals } from '../../http/request-context';
import { defineRoute } from '../../http/route';
import { taskBatchSchema } from '../../schemas/tasks';
import { DOCS, idempotencyKeyHeader, kindRequestSchema } from './create-task';

/** Most tasks in one batch request. */
export const MAX_BATCH_TASKS = 100;

/**
 * Largest batch body. Text kinds fit 100 tasks with room to spare; a batch of uploaded images
 * (`image_base64`) is bounded by this rather than by 100 × 8 MiB: send large images by `image_url`.
 */
export const BATCH_BODY_LIMIT = 16 * 1024 * 1024;

const batchHeaders = {
  schema: z.object({ 'idempotency-key': idempotencyKeyHeader }),
  invalid: 'INVALID_IDEMPOTENCY_KEY',
  describe: {
    'idempotency-key':
      'Makes the batch safe to retry: the same key with the same body within 24 hours returns the first batch again with ' +
      '`Idempotent-Replayed: true` and charges once; the same key with a different body (or first used for a single task) gives ' +
      '409. Keys are per account. 1 to 255 printable ASCII characters, else 400.',
  },
} as const;

/** `POST /api/tasks/{kind}/batch`: 1 to 100 tasks of one kind, all created and charged together, or none. */
export function createTaskBatchRoute(kind: TaskKind) {
  const docs = DOCS[kind];
  const { title } = TASK_KIND_CATALOG[kind];
  const schema = z
    .strictObject(
      {
        tasks: z
          .array(kindRequestSchema(kind), { error: (issue) => (issue.code === 'invalid_type' ? 'must be an array' : undefined) })
          .min(1)
          .max(MAX_BATCH_TASKS)
          .meta({ description: `1 to ${MAX_BATCH_TASKS} creation bodies of this kind (as for the single creation).` }),
      },
      { error: 'must be a JSON object' },
    )
    .meta({ id: `${docs.component}Batch` });
  return defineRoute({
    operationId: `create${docs.component.replace(/^Create/, '')}Batch`,
    method: 'post',
    path: `/api/tasks/${kind}/batch`,
    tag: 'Tasks',
    summary: `Create up to ${MAX_BATCH_TASKS} ${title.toLowerCase()} tasks at once`,
    description:
      'All or nothing: every task is validated (a problem names `tasks[i].field`), then the whole batch is charged in one ' +
      "transaction against the key's credits and spend limit, or nothing is created. Each task is then queued on its own and " +
      'gets its own webhook. For rate limits the batch counts as one request per task, all or none (a refused batch counts as ' +
      'one request when invalid, and not at all when refused 429). `Prefer: wait` does not apply; the body is at most ' +
      `${BATCH_BODY_LIMIT / 1024 / 1024} MiB (send large images by \`image_url\`).`,
    auth: 'apiKey',
    headers: batchHeaders,
    body: {
      schema,
      limit: BATCH_BODY_LIMIT,
      strict: true,
      example: { tasks: [docs.example, docs.example] },
    },
    responses: {
      201: {
        description:
          'Every task created and charged (status 0, queued), in request order; or, with a repeated `Idempotency-Key` and the same ' +
          'body, the first response again (`Idempotent-Replayed: true`).',
        schema: taskBatchSchema,
        headers: ['Idempotent-Replayed'],
      },
    },
    errors: ['INSUFFICIENT_CREDITS', 'SPEND_LIMIT_REACHED', 'IDEMPOTENCY_KEY_REUSED', 'BATCH_EXCEEDS_RATE_LIMIT'],
    invalidExamples: [
      ['More than 100 tasks', 'tasks', `must have at most ${MAX_BATCH_TASKS} items`],
      ['tasks is not an array', 'tasks', 'must be an array'],
      ['An item of another kind (a field this kind does not know)', 'tasks[2].colour', 'is not a known field'],
      ...docs.invalidExamples.filter(([, field]) => field !== '(body)').map(([summary, field, problem]) => [`${summary} (item 0)`, `tasks[0].${field}`, problem] as const),
    ],
    async handler({ body, headers, rawBody }, { deps, principal, req, res }) {
      const { config, taskCreator, enqueueTask, logger, metrics, rateLimiter } = deps;
      const itemTexts = topLevelArrayElementTexts(rawBody ?? JSON.stringify(req.body), 'tasks') ?? [];
      const items: BatchItem[] = body.tasks.map((task, i) => ({
        draft: draftTask(kind, task, itemTexts[i] ?? JSON.stringify((req.body as { tasks: unknown[] }).tasks[i]), `tasks[${i}].`),
        cost: config.taskCosts[kind],
      }));

      // Valid: the one request counted on arrival becomes one per task, all or none.
      const policy = config.rateLimits[principal.type];
      const ticket = locals(res).rateLimitTicket;
      if (!ticket) throw new Error('API-key middleware did not count this request');
      const counted = await rateLimiter.consumeBatch(principal.accountId, principal.keyId, policy, ticket, items.length);
      if (counted.kind === 'revoked') throw new ApiError('INVALID_API_KEY');
      if (counted.kind === 'limited') {
        const never = items.length > policy.perMinute ? 'minute' : items.length > policy.perDay ? 'day' : null;
        if (never) {
          res.removeHeader('RateLimit');
          const limit = never === 'minute' ? policy.perMinute : policy.perDay;
          throw new ApiError('BATCH_EXCEEDS_RATE_LIMIT', { params: { size: items.length, limit, window: never }, fields: { limit, window: never } });
        }
        metrics.rateLimited.inc({ key_type: principal.type, window: counted.window });
        res.setHeader('RateLimit', `"${counted.window}";r=0;t=${counted.retryAfter}`);
        throw new ApiError('RATE_LIMITED', { fields: { limit: counted.limit, window: counted.window, retry_after: counted.retryAfter } });
      }
      res.setHeader('RateLimit', rateLimitHeader(counted.state));

      const key = headers['idempotency-key'];
      const idempotency: IdempotencyRequest | undefined = key === undefined ? undefined : { key, fingerprint: requestFingerprint(`${kind}/batch`, req.body) };
      // One trace for the batch: every task's worker run and webhook attempts join it.
      const traceParent = creationTraceParent(req.headers.traceparent);
      locals(res).traceId = traceIdOf(traceParent);
      const { rows, replayed } = await taskCreator.createBatch(principal, items, idempotency, traceParent);
      const out: Record<string, string> = {};
      let places: Array<TaskQueue | null> = [];
      if (replayed) {
        out['Idempotent-Replayed'] = 'true';
        // The first answer's tasks, with their places as they stand now.
        const now = await deps.taskReader.queuesOf(rows);
        places = rows.map((row) => now.get(row.public_id) ?? null);
      } else {
        metrics.tasksCreated.inc({ kind, key_type: principal.type }, rows.length);
        places = await Promise.all(
          rows.map((row) =>
            enqueueTask(kind, scheduledTask(row, principal.accountId, traceParent)).then(
              (p) => (p ? { ahead: p.ahead, heldByAccountCap: p.heldByCap } : null),
              (err: unknown) => {
                // Committed and paid for; the sweeper gives the scheduler queued tasks it does not know.
                logger.error('could not enqueue task; left for the sweeper', { public_id: row.public_id, error: err });
                return null;
              },
            ),
          ),
        );
      }
      const links = await deps.fileLinks.forRows(rows);
      return { status: 201, jsonText: `{"data":[${rows.map((row, i) => renderTask(row, links, null, places[i] ?? null)).join(',')}]}`, headers: out };
    },
  });
}
