// Component schemas of the key-authenticated task API, its errors, and the webhook body.
import { schema, type OpenApiObject } from './refs';

const nullable = (type: string, extra: OpenApiObject = {}): OpenApiObject => ({ type: [type, 'null'], ...extra });
const timestamp = (description: string): OpenApiObject => nullable('string', { format: 'date-time', description });

const HTTPS_URL: OpenApiObject = { type: 'string', format: 'uri', pattern: '^https://', maxLength: 2048 };

const PROMPT: OpenApiObject = {
  type: 'string',
  minLength: 1,
  maxLength: 2000,
  description: 'What to generate: 1 to 2000 characters (Unicode code points), not only whitespace.',
  example: 'A lighthouse on a cliff at dusk, waves crashing below',
};

const CALLBACK_URL: OpenApiObject = {
  ...HTTPS_URL,
  type: ['string', 'null'],
  description:
    'Where the signed webhook is POSTed when the task completes (20) or fails (30); never for cancellation. ' +
    'Must begin with `https://` (otherwise 400); at most 2048 characters. `null` is the same as absent.',
  example: 'https://example.com/hooks/tasks',
};

const PAYLOAD: OpenApiObject = {
  description:
    'Any JSON value of at most 64 KiB (65536 bytes, measured without insignificant whitespace) and at most 64 levels of ' +
    'nested arrays/objects. Stored and echoed in the ' +
    'task and the webhook exactly as sent: same key order, same number lexemes (`1.0`, `12345678901234567890`), same ' +
    'string escapes; only whitespace between tokens is dropped. JSON `null` or absent: the task shows `null`.',
  example: { order_id: 'A-1001', attempt: 1 },
};

const common: OpenApiObject = { callback_url: CALLBACK_URL, payload: PAYLOAD };

export const taskSchemas: Record<string, OpenApiObject> = {
  Error: {
    type: 'object',
    description: 'Every error body has a human-readable `message`; some add fields (see the more specific schemas).',
    required: ['message'],
    properties: { message: { type: 'string', example: 'Task not found.' } },
  },
  ValidationError: {
    description: 'A 400 from request validation: the first problem in `message`, every problem in `errors`.',
    allOf: [
      schema('Error'),
      {
        type: 'object',
        required: ['errors'],
        properties: {
          errors: {
            type: 'array',
            minItems: 1,
            items: {
              type: 'object',
              required: ['field', 'message'],
              properties: {
                field: { type: 'string', description: 'Field or query parameter name (dotted path); `(body)` for the body as a whole.', example: 'prompt' },
                message: { type: 'string', example: 'must not be empty' },
              },
            },
          },
        },
      },
    ],
  },
  ExpiredTrialKey: {
    description: 'A trial key whose grant has expired.',
    allOf: [
      schema('Error'),
      {
        type: 'object',
        required: ['active_key_prefixes'],
        properties: {
          message: { const: 'This trial API key has expired.' },
          active_key_prefixes: {
            type: 'array',
            description: "`key_prefix` of each of the account's other trial keys that still work (unrevoked, grant unexpired).",
            items: { type: 'string', example: 'sk-test-Ab12Cd34' },
          },
        },
      },
    ],
  },
  RateLimited: {
    allOf: [
      schema('Error'),
      {
        type: 'object',
        required: ['limit', 'window', 'retry_after'],
        properties: {
          message: { const: 'Rate limit exceeded.' },
          limit: { type: 'integer', description: 'The exceeded limit (requests per window).', example: 300 },
          window: { type: 'string', enum: ['minute', 'day'], description: '`minute`: sliding 60 s; `day`: rolling 24 h in hourly buckets.' },
          retry_after: { type: 'integer', minimum: 1, description: 'Seconds until a request can be accepted (same as `Retry-After`).', example: 12 },
        },
      },
    ],
  },
  InsufficientCredits: {
    allOf: [
      schema('Error'),
      {
        type: 'object',
        required: ['required', 'available'],
        properties: {
          message: { const: 'Insufficient credits.' },
          required: { type: 'integer', description: 'The task cost.', example: 10 },
          available: { type: 'integer', description: 'Paid balance (paid key) or grant quota remaining (trial key).', example: 3 },
        },
      },
    ],
  },
  TaskKind: { type: 'string', enum: ['video-generation', 'image-generation', 'face-detection'] },
  TaskStatus: {
    type: 'integer',
    enum: [0, 10, 20, 30, 40],
    description: '`0` queued, `10` processing, `20` completed, `30` failed, `40` cancelled. Terminal: 20, 30, 40.',
    example: 0,
  },
  TaskErrorCode: {
    type: ['string', 'null'],
    enum: ['invalid_input', 'image_fetch_failed', 'engine_error', 'timeout', 'internal_error', null],
    description:
      'Why a task failed (status 30), from this fixed set; `null` unless failed. `invalid_input`: the input could not be ' +
      'processed (e.g. an undecodable image); `image_fetch_failed`: `image_url` could not be downloaded; `engine_error`: the ' +
      'engine reported an error; `timeout`: the engine took too long; `internal_error`: anything else.',
  },
  TaskFile: {
    type: 'object',
    required: ['name', 'content_type', 'size', 'url'],
    properties: {
      name: { type: 'string', pattern: '^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$', example: 'image.png' },
      content_type: { type: 'string', example: 'image/png' },
      size: { type: 'integer', minimum: 0, description: 'Bytes.', example: 48213 },
      url: { type: 'string', format: 'uri', description: 'Download URL (`GET /api/tasks/{publicId}/files/{name}`, same API key).' },
    },
  },
  FaceCoordinate: {
    type: 'object',
    description: 'One detected face, in pixels of the input image.',
    required: ['x', 'y', 'width', 'height', 'score'],
    properties: {
      x: { type: 'number' },
      y: { type: 'number' },
      width: { type: 'number' },
      height: { type: 'number' },
      score: { type: 'number', minimum: 0, maximum: 1, description: 'Detector confidence.' },
    },
  },
  FaceDetectionResult: {
    type: 'object',
    required: ['face_coordinates'],
    properties: { face_coordinates: { type: 'array', items: schema('FaceCoordinate') } },
  },
  TaskInput: {
    description: 'The validated parameters of the task (defaults applied); for an uploaded image only its type and size.',
    anyOf: [
      { title: 'video-generation', type: 'object', properties: { prompt: { type: 'string' }, duration_seconds: { type: 'integer' } } },
      { title: 'image-generation', type: 'object', properties: { prompt: { type: 'string' }, width: { type: 'integer' }, height: { type: 'integer' } } },
      { title: 'face-detection (URL)', type: 'object', properties: { image_url: { type: 'string', format: 'uri' } } },
      {
        title: 'face-detection (upload)',
        type: 'object',
        properties: {
          image_upload: {
            type: 'object',
            properties: { content_type: { type: 'string', enum: ['image/png', 'image/jpeg'] }, size: { type: 'integer' } },
          },
        },
      },
    ],
  },
  Task: {
    type: 'object',
    required: ['public_id', 'kind', 'status', 'error_code', 'input', 'payload', 'callback_url', 'cost', 'created_at', 'started_at', 'finished_at', 'result', 'files'],
    properties: {
      public_id: { type: 'string', pattern: '^task_[A-Za-z0-9]{22}$', description: 'Opaque, URL-safe id (about 131 random bits).', example: 'task_3kT9xQ2mLp7Vn4Rb8Yc1Zd' },
      kind: schema('TaskKind'),
      status: schema('TaskStatus'),
      error_code: schema('TaskErrorCode'),
      input: schema('TaskInput'),
      payload: PAYLOAD,
      callback_url: nullable('string', { format: 'uri', description: 'As given at creation, or `null`.' }),
      cost: { type: 'integer', description: 'Credits charged (refunded in full when the task fails or is cancelled).', example: 10 },
      created_at: { type: 'string', format: 'date-time' },
      started_at: timestamp('When a worker started it; `null` before.'),
      finished_at: timestamp('When it reached a terminal status; `null` before.'),
      result: {
        description:
          'The engine result once completed, else `null`. Built-in engines: face detection `{"face_coordinates": [...]}`; ' +
          'image generation `{"width","height"}` with file `image.png`; video generation ' +
          '`{"width","height","duration_seconds","frames","fps","format"}` with file `video.mp4` (H.264) or, on a worker ' +
          'without ffmpeg, `video.gif` (an animated GIF). With the `http` ' +
          'engine, whatever the inference server returns.',
        anyOf: [schema('FaceDetectionResult'), { type: 'object' }, { type: 'null' }],
      },
      files: { type: 'array', items: schema('TaskFile'), description: 'Files produced (e.g. the PNG or the video); empty until completed.' },
    },
  },
  TaskList: {
    type: 'object',
    required: ['data', 'next_cursor'],
    properties: {
      data: { type: 'array', items: schema('Task'), description: 'Newest first.' },
      next_cursor: nullable('string', { description: 'Pass as `cursor` for the next page; `null` on the last page.' }),
    },
  },
  CreateVideoTask: {
    type: 'object',
    additionalProperties: false,
    required: ['prompt'],
    properties: {
      prompt: PROMPT,
      duration_seconds: { type: 'integer', minimum: 1, maximum: 10, default: 4, description: 'Video length in seconds.' },
      ...common,
    },
  },
  CreateImageTask: {
    type: 'object',
    additionalProperties: false,
    required: ['prompt'],
    properties: {
      prompt: PROMPT,
      width: { type: 'integer', minimum: 64, maximum: 1024, default: 512, description: 'Pixels.' },
      height: { type: 'integer', minimum: 64, maximum: 1024, default: 512, description: 'Pixels.' },
      ...common,
    },
  },
  CreateFaceDetectionTask: {
    type: 'object',
    additionalProperties: false,
    description: 'Exactly one of `image_url` or `image_base64`.',
    oneOf: [{ required: ['image_url'] }, { required: ['image_base64'] }],
    properties: {
      image_url: { ...HTTPS_URL, description: 'An https:// URL of a JPEG or PNG image, fetched by the worker.' },
      image_base64: {
        type: 'string',
        contentEncoding: 'base64',
        description:
          'The image as base64 (line breaks allowed), optionally as a data URL (`data:image/png;base64,...`, `image/jpeg`, ' +
          '`image/jpg`). At most 8 MiB (8388608 bytes) decoded; must be a JPEG or PNG.',
      },
      ...common,
    },
  },
  WebhookEvent: {
    type: 'object',
    description:
      'Body of the webhook POSTed to `callback_url` when a task reaches 20 or 30 (never 40). Video and image generation: ' +
      'exactly `public_id`, `status`, `error_code`, `payload`; face detection adds `result`. Signed as sent: `X-Signature` ' +
      'is the lowercase hex HMAC-SHA256 of the exact body bytes keyed with the account webhook secret; `X-Timestamp` is ' +
      'the unix time in seconds when sent.',
    required: ['public_id', 'status', 'error_code', 'payload'],
    additionalProperties: false,
    properties: {
      public_id: { type: 'string', example: 'task_3kT9xQ2mLp7Vn4Rb8Yc1Zd' },
      status: { type: 'integer', enum: [20, 30], description: '`20` completed or `30` failed.' },
      error_code: schema('TaskErrorCode'),
      payload: PAYLOAD,
      result: {
        description: 'Face detection only: the detections, or `null` when the task failed.',
        anyOf: [schema('FaceDetectionResult'), { type: 'null' }],
      },
    },
  },
};
