import { z } from 'zod';
import { bodyError, commonFields, httpsUrl, intInRange, MAX_IMAGE_BYTES, prompt } from './request-fields';

/**
 * What a task kind is. The API (request schema, body limit), the configuration (cost, timeout and
 * engine variables), the worker, the queues and the webhook dispatcher all read it from here.
 */
export interface TaskKindDefinition {
  /** Human name, for docs and the console: "Video generation". */
  title: string;
  /** What a task of this kind does with its input, for the API reference (Markdown). */
  description: string;
  /**
   * Body of `POST /api/tasks/<kind>`. Its output (defaults applied) is what the task stores as
   * `input` and the engine gets as `params`. Its messages are the API's 400 texts.
   */
  request: z.ZodType<Record<string, unknown>>;
  /** Largest JSON body `POST /api/tasks/<kind>` accepts, in bytes; larger → 413. */
  bodyLimitBytes: number;
  /** Credits charged per task: `default` unless the variable is set. */
  cost: { default: number; variable: `TASK_COST_${string}` };
  /** Deadline of one engine run in milliseconds: `default` unless the variable is set. */
  timeoutMs: { default: number; variable: `TASK_TIMEOUT_${string}_MS` };
  /**
   * The variables of the kind's engine: `variable` chooses `builtin` (the default) or `cog`; a Cog
   * model server is at `cogUrl`, `cogInputMap` renames input fields for it, and `cogMaxConcurrency`
   * says how many predictions it runs at once (docs/models.md).
   */
  engine: {
    variable: `ENGINE_${string}`;
    cogUrl: `COG_URL_${string}`;
    cogInputMap: `COG_INPUT_MAP_${string}`;
    cogMaxConcurrency: `COG_MAX_CONCURRENCY_${string}`;
    /** The input fields a model gets, by our names (what `cogInputMap` may rename). */
    modelInputs: readonly string[];
  };
  /** Webhook body: whether `result` follows the spec's four fields (`null` when the task failed). */
  webhook: { result: boolean };
}

/** Requests of a few text fields. */
const TEXT_BODY_LIMIT = 1024 * 1024;

/**
 * Every task kind, in the order lists show them. A new kind also needs its built-in engine and a
 * migration adding it to the `task_kind` enum (docs/architecture.md, *Adding a task kind*).
 */
export const TASK_KIND_CATALOG = {
  'video-generation': {
    title: 'Video generation',
    description: 'Renders a video from `prompt`, `duration_seconds` long.',
    request: z.strictObject({ prompt, duration_seconds: intInRange(1, 10).default(4), ...commonFields }, bodyError),
    bodyLimitBytes: TEXT_BODY_LIMIT,
    cost: { default: 10, variable: 'TASK_COST_VIDEO' },
    timeoutMs: { default: 120_000, variable: 'TASK_TIMEOUT_VIDEO_MS' },
    engine: { variable: 'ENGINE_VIDEO', cogUrl: 'COG_URL_VIDEO', cogInputMap: 'COG_INPUT_MAP_VIDEO', cogMaxConcurrency: 'COG_MAX_CONCURRENCY_VIDEO', modelInputs: ['prompt', 'duration_seconds'] },
    webhook: { result: false },
  },
  'image-generation': {
    title: 'Image generation',
    description: 'Renders a `width` × `height` PNG from `prompt`.',
    request: z.strictObject(
      { prompt, width: intInRange(64, 1024).default(512), height: intInRange(64, 1024).default(512), ...commonFields },
      bodyError,
    ),
    bodyLimitBytes: TEXT_BODY_LIMIT,
    cost: { default: 2, variable: 'TASK_COST_IMAGE' },
    timeoutMs: { default: 30_000, variable: 'TASK_TIMEOUT_IMAGE_MS' },
    engine: { variable: 'ENGINE_IMAGE', cogUrl: 'COG_URL_IMAGE', cogInputMap: 'COG_INPUT_MAP_IMAGE', cogMaxConcurrency: 'COG_MAX_CONCURRENCY_IMAGE', modelInputs: ['prompt', 'width', 'height'] },
    webhook: { result: false },
  },
  'face-detection': {
    title: 'Face detection',
    description:
      'Detects faces in one JPEG or PNG image, given as `image_url` (https, fetched by the worker) or `image_base64` (at most ' +
      '8 MiB decoded). The result is `{"face_coordinates": [{x, y, width, height, score}]}` in pixels.',
    request: z
      .strictObject(
        {
          image_url: httpsUrl.optional(),
          image_base64: z.string({ error: 'must be a string of base64' }).optional(),
          ...commonFields,
        },
        bodyError,
      )
      .refine((b) => (b.image_url === undefined) !== (b.image_base64 === undefined), {
        error: 'must have exactly one of image_url and image_base64',
      }),
    // Base64 of the largest image plus room for the other fields.
    bodyLimitBytes: Math.ceil((MAX_IMAGE_BYTES * 4) / 3) + 256 * 1024,
    cost: { default: 1, variable: 'TASK_COST_FACE' },
    timeoutMs: { default: 30_000, variable: 'TASK_TIMEOUT_FACE_MS' },
    engine: { variable: 'ENGINE_FACE', cogUrl: 'COG_URL_FACE', cogInputMap: 'COG_INPUT_MAP_FACE', cogMaxConcurrency: 'COG_MAX_CONCURRENCY_FACE', modelInputs: ['image'] },
    webhook: { result: true },
  },
} satisfies Record<string, TaskKindDefinition>;

type Catalog = typeof TASK_KIND_CATALOG;

/** A task kind, in the spelling used by URLs, queue names, the `task_kind` enum and the task JSON. */
export type TaskKind = keyof Catalog;

/** The task kinds, in catalog order. */
export const TASK_KINDS = Object.freeze(Object.keys(TASK_KIND_CATALOG)) as readonly TaskKind[];

export function isTaskKind(value: string): value is TaskKind {
  return Object.hasOwn(TASK_KIND_CATALOG, value);
}

/** A frozen record with one entry per kind, computed from each kind's definition. */
export function perTaskKind<T>(entry: (definition: TaskKindDefinition, kind: TaskKind) => T): Readonly<Record<TaskKind, T>> {
  return Object.freeze(Object.fromEntries(TASK_KINDS.map((kind) => [kind, entry(TASK_KIND_CATALOG[kind], kind)]))) as Record<TaskKind, T>;
}

/** Each kind's request schema (`TASK_KIND_CATALOG[kind].request`) as one map. */
export const TASK_REQUEST_SCHEMAS = perTaskKind((definition) => definition.request);

/** The validated body of `POST /api/tasks/<kind>`, defaults applied. */
export type TaskRequest<K extends TaskKind = TaskKind> = z.output<Catalog[K]['request']>;
