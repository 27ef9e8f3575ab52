// `/api/tasks*`: the key-authenticated task API (DESIGN §4).
import {
  API_KEY_SECURITY,
  RATE_HEADERS,
  errorResponse,
  header,
  headers,
  json,
  parameter,
  response,
  schema,
  type OpenApiObject,
} from './refs';
import { apiKeyErrors, taskListBadRequest } from './responses';

const TAGS = ['Tasks'];

// 400s every creation endpoint can give, besides the kind's own field errors.
const COMMON_CREATE_400 = ['EmptyBody', 'BodyNotObject', 'MalformedJson', 'UnknownField', 'CallbackNotHttps', 'PayloadTooLarge', 'InvalidIdempotencyKey'];

interface CreateSpec {
  summary: string;
  description: string;
  bodySchema: string;
  cost: number;
  examples400: string[];
  example413: string;
  requestExample: OpenApiObject;
}

function createOperation(spec: CreateSpec): OpenApiObject {
  return {
    post: {
      tags: TAGS,
      operationId: `create${spec.bodySchema.replace(/^Create/, '')}`,
      summary: spec.summary,
      description:
        `${spec.description}\n\nCosts ${spec.cost} credit(s) by default (configurable): a paid key draws on the account's paid ` +
        "balance, a trial key on its grant's remaining quota. Failed (30) and cancelled (40) tasks are refunded in full. " +
        'When the task completes or fails and has a `callback_url`, a signed webhook is sent (see `WebhookEvent`).',
      security: API_KEY_SECURITY,
      parameters: [parameter('IdempotencyKey')],
      requestBody: { required: true, content: { 'application/json': { schema: schema(spec.bodySchema), example: spec.requestExample } } },
      responses: {
        '201': response('TaskCreated'),
        '400': {
          description: 'The body or the `Idempotency-Key` header is invalid. Validation errors list every problem in `errors`.',
          headers: headers(...RATE_HEADERS),
          content: json({ anyOf: [schema('ValidationError'), schema('Error')] }, [...spec.examples400, ...COMMON_CREATE_400]),
        },
        '402': response('InsufficientCredits'),
        '409': response('IdempotencyConflict'),
        '413': errorResponse('The body is over the limit for this endpoint.', 'Error', [spec.example413], RATE_HEADERS),
        '415': response('TaskUnsupportedMediaType'),
        ...apiKeyErrors,
      },
    },
  };
}

const notModified: OpenApiObject = {
  description: 'Conditional request (`If-None-Match` / `If-Modified-Since`) and the file is unchanged.',
  headers: { ...headers(...RATE_HEADERS), ETag: { schema: { type: 'string' } } },
};

export const taskPaths: Record<string, OpenApiObject> = {
  '/api/tasks/video-generation': createOperation({
    summary: 'Create a video generation task',
    description: 'Renders a video from `prompt`, `duration_seconds` long.',
    bodySchema: 'CreateVideoTask',
    cost: 10,
    examples400: ['PromptEmpty', 'PromptTooLong', 'DurationOutOfRange'],
    example413: 'BodyTooLarge1MiB',
    requestExample: { prompt: 'A paper boat drifting down a rainy street', duration_seconds: 6, callback_url: 'https://example.com/hooks/tasks', payload: { order_id: 'A-1001' } },
  }),
  '/api/tasks/image-generation': createOperation({
    summary: 'Create an image generation task',
    description: 'Renders a `width` × `height` PNG from `prompt`.',
    bodySchema: 'CreateImageTask',
    cost: 2,
    examples400: ['PromptEmpty', 'PromptTooLong', 'WidthOutOfRange'],
    example413: 'BodyTooLarge1MiB',
    requestExample: { prompt: 'A lighthouse on a cliff at dusk', width: 768, height: 512, payload: { order_id: 'A-1002' } },
  }),
  '/api/tasks/face-detection': createOperation({
    summary: 'Create a face detection task',
    description:
      'Detects faces in one JPEG or PNG image, given as `image_url` (https, fetched by the worker) or `image_base64` (at most ' +
      '8 MiB decoded). The result is `{"face_coordinates": [{x, y, width, height, score}]}` in pixels.',
    bodySchema: 'CreateFaceDetectionTask',
    cost: 1,
    examples400: ['ImageSourceRequired', 'ImageUrlNotHttps', 'ImageNotBase64', 'ImageTooLarge', 'ImageNotJpegOrPng'],
    example413: 'BodyTooLargeFace',
    requestExample: { image_url: 'https://example.com/photos/team.jpg', callback_url: 'https://example.com/hooks/tasks' },
  }),
  '/api/tasks': {
    get: {
      tags: TAGS,
      operationId: 'listTasks',
      summary: "List the account's tasks",
      description:
        'Every task of the key\'s account (whichever key created it), newest first, keyset-paginated: follow `next_cursor` ' +
        'until it is `null`. Unknown query parameters and repeated parameters are rejected.',
      security: API_KEY_SECURITY,
      parameters: [parameter('StatusFilter'), parameter('KindFilter'), parameter('Limit'), parameter('Cursor')],
      responses: {
        '200': { description: 'One page of tasks.', headers: headers(...RATE_HEADERS), content: json(schema('TaskList')) },
        '400': taskListBadRequest(RATE_HEADERS),
        ...apiKeyErrors,
      },
    },
  },
  '/api/tasks/{publicId}': {
    get: {
      tags: TAGS,
      operationId: 'getTask',
      summary: 'Get a task',
      description: 'The task with its `result` and `files` once completed.',
      security: API_KEY_SECURITY,
      parameters: [parameter('PublicId')],
      responses: { '200': response('TaskOk'), '400': response('TaskMalformedRequest'), '404': response('TaskNotFound'), ...apiKeyErrors },
    },
  },
  '/api/tasks/{publicId}/cancel': {
    post: {
      tags: TAGS,
      operationId: 'cancelTask',
      summary: 'Cancel a task',
      description:
        'Cancels a queued (0) or processing (10) task: status 40, the cost refunded in full, and no webhook. A worker that ' +
        'picks the task up afterwards skips it. No request body.',
      security: API_KEY_SECURITY,
      parameters: [parameter('PublicId')],
      responses: {
        '200': { ...response('TaskOk'), description: 'The cancelled task (status 40).' },
        '400': response('TaskMalformedRequest'),
        '404': response('TaskNotFound'),
        '409': errorResponse('The task is already completed, failed or cancelled.', 'Error', ['TaskAlreadyFinished'], RATE_HEADERS),
        ...apiKeyErrors,
      },
    },
  },
  '/api/tasks/{publicId}/files/{name}': {
    get: {
      tags: TAGS,
      operationId: 'getTaskFile',
      summary: 'Download a file of a task',
      description:
        'The bytes of one of the task\'s `files`, with its `content_type`. Supports `Range` and conditional requests ' +
        '(`ETag`, `Last-Modified`).',
      security: API_KEY_SECURITY,
      parameters: [parameter('PublicId'), parameter('FileName')],
      responses: {
        '200': {
          description: 'The file.',
          headers: {
            ...headers(...RATE_HEADERS, 'Content-Disposition'),
            'Cache-Control': header('Cache-Control-File'),
            'Content-Type': { description: "The file's `content_type`.", schema: { type: 'string', example: 'image/png' } },
          },
          content: { '*/*': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } },
        },
        '206': {
          description: 'The requested byte range of the file (`Range` request).',
          headers: { ...headers(...RATE_HEADERS, 'Content-Disposition'), 'Content-Range': { schema: { type: 'string', example: 'bytes 0-1023/48213' } } },
          content: { '*/*': { schema: { type: 'string', contentMediaType: 'application/octet-stream' } } },
        },
        '304': notModified,
        '400': response('TaskMalformedRequest'),
        '404': errorResponse(
          "No such task for this account, or the task has no file of that name.",
          'Error',
          ['TaskNotFound', 'FileNotFound'],
          RATE_HEADERS,
        ),
        '412': errorResponse('`If-Match` / `If-Unmodified-Since` precondition failed.', 'Error', ['MalformedRequest'], RATE_HEADERS),
        '416': {
          ...errorResponse('The `Range` cannot be satisfied.', 'Error', ['MalformedRequest'], RATE_HEADERS),
          headers: { ...headers(...RATE_HEADERS), 'Content-Range': { schema: { type: 'string', example: 'bytes */48213' } } },
        },
        ...apiKeyErrors,
      },
    },
  },
};
