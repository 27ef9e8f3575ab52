// The task JSON the API sends (docs/api.md) and the webhook body (docs/webhooks.md). The API renders task
// JSON as text (payload is echoed byte for byte, see domain/task-view.ts); these schemas describe
// it for the OpenAPI document and the SDK, and the contract tests parse real responses with them.
import { z } from 'zod';
import { TASK_ERROR_CODES, TASK_STATUSES } from '@taskapi/domain';
import { FAIRNESS_KEY, TASK_KINDS } from '@taskapi/task-kinds';
import { nullableTimestamp, prefixedId, timestamp } from './common';

export const PAYLOAD_DESCRIPTION =
  'Any JSON value of at most 64 KiB (65536 bytes, measured without insignificant whitespace) and at most 64 levels of ' +
  'nested arrays/objects. Stored and echoed in the task and the webhook exactly as sent: same key order, same number ' +
  'lexemes (`1.0`, `12345678901234567890`), same string escapes; only whitespace between tokens is dropped. JSON `null` ' +
  'or absent: the task shows `null`.';

const payload = z.unknown().meta({ description: PAYLOAD_DESCRIPTION, example: { order_id: 'A-1001', attempt: 1 } });

export const taskIdSchema = prefixedId('task', 'task_3kT9xQ2mLp7Vn4Rb8Yc1Zd');

export const taskKindSchema = z.enum(TASK_KINDS).meta({ id: 'TaskKind' });

export const taskStatusSchema = z
  .union(TASK_STATUSES.map((s) => z.literal(s)))
  .meta({ id: 'TaskStatus', description: '`0` queued, `10` processing, `20` completed, `30` failed, `40` cancelled. Terminal: 20, 30, 40.', example: 0 });

export const taskErrorCodeSchema = z
  .enum(TASK_ERROR_CODES)
  .nullable()
  .meta({
    id: 'TaskErrorCode',
    description:
      'Why a task failed (status 30), from this fixed set; `null` unless failed, or expired. `invalid_input`: the input could not be ' +
      'processed (e.g. an undecodable image); `image_fetch_failed`: `image_url` could not be downloaded; `engine_error`: the ' +
      'engine reported an error; `timeout`: the engine took too long; `internal_error`: anything else; `model_unavailable`: no model ' +
      'server took it: they stayed busy or not ready for `MODEL_BUSY_TIMEOUT_MS` in all (try again later); `expired`: (status 40, ' +
      'refunded, no webhook) it did not start within its `ttl_seconds`.',
  });

export const taskFileSchema = z
  .object({
    name: z
      .string()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/)
      .meta({ example: 'image.png' }),
    content_type: z.string().meta({ example: 'image/png' }),
    size: z.int().min(0).meta({ description: 'Bytes.', example: 48213 }),
    url: z.url().meta({
      description:
        'Signed download link that needs no API key, valid for `FILE_URL_TTL_SECONDS` (default 3600) from this response: a presigned ' +
        'URL of the bucket (`STORAGE_DRIVER=s3`) or `GET /api/files/{publicId}/{name}?expires=…&signature=…`. Fetch a fresh task for a ' +
        'fresh link. `GET /api/tasks/{publicId}/files/{name}` with the API key keeps working. In the console API: the session-authenticated file route.',
    }),
  })
  .meta({ id: 'TaskFile' });

export const faceCoordinateSchema = z
  .object({
    x: z.number(),
    y: z.number(),
    width: z.number(),
    height: z.number(),
    score: z.number().min(0).max(1).meta({ description: 'Detector confidence.' }),
  })
  .meta({ id: 'FaceCoordinate', description: 'One detected face, in pixels of the input image.' });

export const faceDetectionResultSchema = z.object({ face_coordinates: z.array(faceCoordinateSchema) }).meta({ id: 'FaceDetectionResult' });

export const taskInputSchema = z
  .union([
    z.object({ prompt: z.string(), duration_seconds: z.int() }).meta({ title: 'video-generation' }),
    z.object({ prompt: z.string(), width: z.int(), height: z.int() }).meta({ title: 'image-generation' }),
    z.object({ image_url: z.url() }).meta({ title: 'face-detection (URL)' }),
    z
      .object({ image_upload: z.object({ content_type: z.enum(['image/png', 'image/jpeg']), size: z.int() }) })
      .meta({ title: 'face-detection (upload)' }),
  ])
  .meta({ id: 'TaskInput', description: 'The validated parameters of the task (defaults applied); for an uploaded image only its type and size.' });

export const taskSchema = z
  .object({
    public_id: taskIdSchema.meta({ description: 'Opaque, URL-safe id (about 131 random bits).' }),
    kind: taskKindSchema,
    status: taskStatusSchema,
    error_code: taskErrorCodeSchema,
    error_message: z.string().nullable().meta({
      description:
        'When failed: what went wrong, in a sentence you can act on (e.g. "The image at image_url could not be fetched: the server answered 404."); ' +
        'never a stack trace or a secret. `null` otherwise, and on tasks that failed before this field existed. Not part of the webhook body.',
      example: 'The image at image_url could not be fetched: the server answered 404.',
    }),
    input: taskInputSchema,
    payload,
    callback_url: z.url().nullable().meta({ description: 'As given at creation, or `null`.' }),
    cost: z.int().meta({ description: 'Credits charged (refunded in full when the task fails or is cancelled).', example: 10 }),
    created_at: timestamp(),
    started_at: nullableTimestamp('When a worker started it; `null` before.'),
    finished_at: nullableTimestamp('When it reached a terminal status; `null` before.'),
    result: z
      .union([faceDetectionResultSchema, z.record(z.string(), z.unknown()), z.null()])
      .meta({
        description:
          'The engine result once completed, else `null`. Built-in engines: face detection `{"face_coordinates": [...]}`; ' +
          'image generation `{"width","height"}` with file `image.png`; video generation ' +
          '`{"width","height","duration_seconds","frames","fps","format"}` with file `video.mp4` (H.264) or, on a worker ' +
          'without ffmpeg, `video.gif` (an animated GIF). On a Cog model server (the `cog` engine): `{"metrics": …}` with ' +
          'the model\'s files, or `{"face_coordinates": [...]}` for face detection.',
      }),
    files: z.array(taskFileSchema).meta({ description: 'Files produced (e.g. the PNG or the video); empty until completed, and again once they expired.' }),
    files_expired_at: nullableTimestamp(
      'When the stored files (outputs and uploaded input) were deleted, `RETENTION_DAYS` after `finished_at`; `null` until then. ' +
        'From then on `files` is empty and the file routes answer 410.',
    ),
    progress: z
      .number()
      .min(0)
      .max(1)
      .nullable()
      .meta({
        description:
          'How far the task is, from 0 to 1 (two decimals): `null` while queued and until the engine reports; while processing, the ' +
          'latest value the engine reported (updated at most twice a second); `1` once completed; when the task fails or is ' +
          'cancelled, the value it had then, kept. `GET /api/tasks/{publicId}/events` streams its changes. Not part of the webhook body.',
        example: 0.42,
      }),
    priority: z.int().min(-86400).max(86400).nullable().meta({
      description:
        'As given at creation (seconds, -86400 to 86400), or `null` (0). Within its account and kind the task is placed as if created ' +
        'that many seconds earlier (negative: later); it never changes the share between accounts.',
      example: null,
    }),
    ttl_seconds: z.int().min(1).max(604800).nullable().meta({
      description:
        'As given at creation, or `null`. A task still queued that long after its creation, never started, expires within 2 s: status ' +
        '40, `error_code` `expired`, refunded in full, no webhook.',
      example: null,
    }),
    fairness_key: z.string().nullable().meta({
      description:
        'As given at creation (e.g. your own end user), or `null`. Within its account and kind, queued tasks take turns across keys: ' +
        'the next comes from the key with the fewest running; tasks without a key form one group of their own.',
      example: null,
    }),
    queue: z
      .object({
        ahead: z.int().min(0).meta({ description: "How many of the account's queued tasks of the same kind and fairness key start before it." }),
        held_by_account_cap: z.boolean().meta({ description: 'True while the account is at its cap of running tasks (it waits for one of them to end).' }),
      })
      .nullable()
      .meta({
        description:
          "While queued, where the task stands in its account's line; `null` in every other status (and for a moment after a restore, " +
          'while the scheduler does not hold it). Not part of the webhook body.',
        example: { ahead: 2, held_by_account_cap: false },
      }),
  })
  .meta({ id: 'Task' });

export type TaskView = z.infer<typeof taskSchema>;

export const taskListSchema = z
  .object({
    data: z.array(taskSchema).meta({ description: 'Newest first.' }),
    next_cursor: taskIdSchema.nullable().meta({ description: 'Pass as `cursor` for the next page; `null` on the last page.' }),
  })
  .meta({ id: 'TaskList' });

export const taskBatchSchema = z
  .object({ data: z.array(taskSchema).meta({ description: 'The created tasks, in the order of the request\'s `tasks`.' }) })
  .meta({ id: 'TaskBatch' });

export type TaskBatchView = z.infer<typeof taskBatchSchema>;

export const webhookEventSchema = z
  .strictObject({
    public_id: taskIdSchema,
    status: z.union([z.literal(20), z.literal(30)]).meta({ description: '`20` completed or `30` failed.' }),
    error_code: taskErrorCodeSchema,
    payload,
    result: z
      .union([faceDetectionResultSchema, z.null()])
      .optional()
      .meta({ description: 'Face detection only: the detections, or `null` when the task failed.' }),
  })
  .meta({
    id: 'WebhookEvent',
    description:
      'Body of the webhook POSTed to `callback_url` when a task reaches 20 or 30 (never 40). Video and image generation: ' +
      'exactly `public_id`, `status`, `error_code`, `payload`; face detection adds `result`. Signed as sent: `X-Signature` ' +
      'is the lowercase hex HMAC-SHA256 of the exact body bytes keyed with the account webhook secret; `X-Timestamp` is ' +
      'the unix time in seconds when sent.',
  });

/** Most ids of one bulk cancel. */
export const MAX_BULK_CANCEL_IDS = 1000;

export const bulkCancelRequestSchema = z
  .strictObject(
    {
      ids: z
        .array(z.string({ error: 'must be task ids (strings)' }).max(64, { error: 'must be task ids (strings)' }), { error: 'must be a list of task ids' })
        .min(1, { error: 'must list 1 to 1000 task ids' })
        .max(MAX_BULK_CANCEL_IDS, { error: 'must list 1 to 1000 task ids' })
        .optional()
        .meta({ description: 'Up to 1000 task ids (`public_id`); one given twice is cancelled once and reported for each.' }),
      filter: z
        .strictObject(
          {
            kind: taskKindSchema.optional(),
            status: z.union([z.literal(0), z.literal(10)], { error: 'must be 0 or 10' }).optional(),
            fairness_key: z
              .string({ error: 'must be 1 to 64 characters from A-Z a-z 0-9 . _ : @ -' })
              .regex(FAIRNESS_KEY, { error: 'must be 1 to 64 characters from A-Z a-z 0-9 . _ : @ -' })
              .optional(),
          },
          { error: 'must be a JSON object' },
        )
        .optional()
        .meta({ description: "Every non-terminal task of the key's account that matches all of these (an empty filter: all of them)." }),
    },
    { error: 'must be a JSON object' },
  )
  .refine((b) => (b.ids === undefined) !== (b.filter === undefined), { error: 'must have exactly one of ids and filter' })
  .meta({ id: 'BulkCancelRequest', description: 'Exactly one of `ids` and `filter`.' });

export const bulkCancelResultSchema = z
  .object({
    cancelled: z.int().min(0).meta({ description: 'How many tasks this request cancelled.' }),
    results: z
      .array(
        z.object({
          public_id: z.string(),
          outcome: z.enum(['cancelled', 'already_finished', 'not_found']).meta({
            description: '`cancelled` by this request; `already_finished` (terminal before, or cancelled by an earlier request); `not_found` (unknown, or another account\'s).',
          }),
        }),
      )
      .optional()
      .meta({ description: 'For `ids` only: one per id, in their order.' }),
  })
  .meta({ id: 'BulkCancelResult' });
