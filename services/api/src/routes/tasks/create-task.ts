import { z } from 'zod';
import { creationTraceParent, traceIdOf } from '@taskapi/telemetry';
import { TASK_KIND_CATALOG, type TaskKind } from '@taskapi/task-kinds';
import { requestFingerprint, scheduledTask, type IdempotencyRequest } from '../../domain/create-task';
import { createTaskSchemas, draftTask } from '../../domain/task-input';
import { renderTask, type TaskQueue } from '../../domain/task-view';
import { locals } from '../../http/request-context';
import { defineRoute } from '../../http/route';
import { taskSchema } from '../../schemas/tasks';
import { applyPreferWait, preferHeader } from './prefer-wait';

/** `Idempotency-Key`: 1 to 255 printable ASCII characters. */
export const idempotencyKeyHeader = z.string().regex(/^[\x21-\x7e]{1,255}$/).optional().meta({ example: 'order-A-1001-render' });

const idempotencyHeaders = {
  schema: z.object({
    'idempotency-key': idempotencyKeyHeader,
    prefer: preferHeader.schema,
  }),
  invalid: 'INVALID_IDEMPOTENCY_KEY',
  describe: {
    'idempotency-key':
      'Makes creation safe to retry: the same key with the same body (same kind; key order and whitespace do not matter) within ' +
      '24 hours returns the first task again with `Idempotent-Replayed: true` and charges once; the same key with a different ' +
      'body gives 409. Keys are per account. 1 to 255 printable ASCII characters, else 400.',
    prefer: preferHeader.description,
  },
} as const;

/** What the API reference adds to a kind's catalog entry (its title and description). */
interface KindDocs {
  component: string;
  example: Record<string, unknown>;
  invalidExamples: ReadonlyArray<readonly [string, string, string]>;
}

export const DOCS: Record<TaskKind, KindDocs> = {
  'video-generation': {
    component: 'CreateVideoTask',
    example: { prompt: 'A paper boat drifting down a rainy street', duration_seconds: 6, callback_url: 'https://example.com/hooks/tasks', payload: { order_id: 'A-1001' } },
    invalidExamples: [
      ['prompt is missing', 'prompt', 'is required'],
      ['prompt is blank', 'prompt', 'must not be empty'],
      ['duration_seconds out of range', 'duration_seconds', 'must be an integer from 1 to 10'],
    ],
  },
  'image-generation': {
    component: 'CreateImageTask',
    example: { prompt: 'A lighthouse on a cliff at dusk', width: 768, height: 512, payload: { order_id: 'A-1002' } },
    invalidExamples: [
      ['prompt over 2000 characters', 'prompt', 'must be at most 2000 characters'],
      ['width out of range', 'width', 'must be an integer from 64 to 1024'],
    ],
  },
  'face-detection': {
    component: 'CreateFaceDetectionTask',
    example: { image_url: 'https://example.com/photos/team.jpg', callback_url: 'https://example.com/hooks/tasks' },
    invalidExamples: [
      ['Neither or both of image_url and image_base64', '(body)', 'must have exactly one of image_url and image_base64'],
      ['image_base64 is not a JPEG or PNG', 'image_base64', 'must be a JPEG or PNG image'],
    ],
  },
};

export const COMMON_INVALID = [
  ['The body is JSON but not an object', '(body)', 'must be a JSON object'],
  ['A field the endpoint does not know', 'colour', 'is not a known field'],
  ['callback_url is not https', 'callback_url', 'must be an https:// URL'],
  ['payload over 64 KiB of JSON', 'payload', 'must be at most 65536 bytes of JSON'],
] as const;

const kindSchemas = new Map<TaskKind, z.ZodType<Record<string, unknown>>>();

/** A kind's creation body, as the document's component (`CreateVideoTask`…): one instance per kind. */
export function kindRequestSchema(kind: TaskKind): z.ZodType<Record<string, unknown>> {
  let schema = kindSchemas.get(kind);
  if (!schema) kindSchemas.set(kind, (schema = createTaskSchemas[kind].meta({ id: DOCS[kind].component })));
  return schema;
}

/** `POST /api/tasks/{kind}`: validates, charges and records the task, then queues it. */
export function createTaskRoute(kind: TaskKind) {
  const docs = DOCS[kind];
  const { title, description } = TASK_KIND_CATALOG[kind];
  const schema = kindRequestSchema(kind);
  return defineRoute({
    operationId: `create${docs.component.replace(/^Create/, '')}`,
    method: 'post',
    path: `/api/tasks/${kind}`,
    tag: 'Tasks',
    summary: `Create ${/^[aeiou]/i.test(title) ? 'an' : 'a'} ${title.toLowerCase()} task`,
    description:
      `${description}\n\nA paid key draws on the account's paid balance, a trial key on its grant's remaining quota ` +
      '(costs are configurable). Failed (30) and cancelled (40) tasks are refunded in full. When the task completes or fails ' +
      'and has a `callback_url`, a signed webhook is sent (see `WebhookEvent`).',
    auth: 'apiKey',
    headers: idempotencyHeaders,
    body: {
      schema,
      limit: TASK_KIND_CATALOG[kind].bodyLimitBytes,
      strict: true,
      verbatim: ['payload'],
      example: docs.example,
    },
    responses: {
      201: {
        description:
          'Task created and charged (status 0, queued); or, with a repeated `Idempotency-Key` and the same body, the first ' +
          'response again (`Idempotent-Replayed: true`).',
        schema: taskSchema,
        headers: ['Location', 'Idempotent-Replayed', 'Preference-Applied'],
      },
    },
    errors: ['INSUFFICIENT_CREDITS', 'SPEND_LIMIT_REACHED', 'IDEMPOTENCY_KEY_REUSED'],
    invalidExamples: [...docs.invalidExamples, ...COMMON_INVALID],
    async handler({ body, headers, rawBody }, { deps, principal, req, res }) {
      const { config, taskCreator, enqueueTask, logger, metrics } = deps;
      const draft = draftTask(kind, body, rawBody ?? JSON.stringify(body));
      const key = headers['idempotency-key'];
      // The fingerprint is of the body as sent (before defaults), so equal requests match.
      const idempotency: IdempotencyRequest | undefined = key === undefined ? undefined : { key, fingerprint: requestFingerprint(kind, req.body) };

      // The task's trace: the caller's (a valid `traceparent`) or a new one; see creationTraceParent.
      const traceParent = creationTraceParent(req.headers.traceparent);
      const ctx = locals(res);
      ctx.traceId = traceIdOf(traceParent);
      const { row, replayed } = await taskCreator.create(principal, draft, config.taskCosts[kind], idempotency, traceParent);
      ctx.publicId = row.public_id;
      const out: Record<string, string> = { Location: `${config.publicBaseUrl}/api/tasks/${row.public_id}` };
      let place: TaskQueue | null = null;
      if (replayed) {
        out['Idempotent-Replayed'] = 'true';
        // The first answer's task, with its place as it stands now (none once it left the scheduler).
        place = (await deps.taskReader.queuesOf([row])).get(row.public_id) ?? null;
      } else {
        metrics.tasksCreated.inc({ kind, key_type: principal.type });
        try {
          const position = await enqueueTask(kind, scheduledTask(row, principal.accountId, traceParent));
          if (position) place = { ahead: position.ahead, heldByAccountCap: position.heldByCap };
        } catch (err) {
          // The task is committed and paid for; the sweeper gives the scheduler queued tasks it does not know.
          logger.error('could not enqueue task; left for the sweeper', { public_id: row.public_id, error: err });
        }
      }
      // `Prefer: wait`: the created task once it is terminal (or after N seconds), still as a 201.
      // The task is committed and paid for by now: a failed wait (Redis or PostgreSQL down) must
      // not turn the creation into an error a client would retry, so it answers the created task.
      const waited = await applyPreferWait(deps, headers.prefer, principal.accountId, row.public_id, res).catch((err: unknown) => {
        logger.warn('waiting for a created task failed; answering the created task', { public_id: row.public_id, error: err });
        return undefined;
      });
      if (waited?.gone) return { sent: true };
      // A task just created is queued: no progress yet, its place as its submission found it.
      const answer = waited?.task ?? { row, progress: null, queue: place };
      return { status: 201, jsonText: renderTask(answer.row, await deps.fileLinks.forRows([answer.row]), answer.progress, answer.queue), headers: { ...out, ...waited?.headers } };
    },
  });
}
