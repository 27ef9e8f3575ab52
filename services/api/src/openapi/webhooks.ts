// The webhook the service sends to a task's `callback_url` (docs/webhooks.md), as an OpenAPI 3.1 `webhooks` entry.
import type { z } from 'zod';
import { webhookEventSchema } from '../schemas/tasks';

type OpenApiObject = Record<string, unknown>;

const headerParam = (name: string, description: string, example: string | number, type = 'string'): OpenApiObject => ({
  name,
  in: 'header',
  required: true,
  description,
  schema: { type, example },
});

/** The `webhooks` section; `toJson` turns zod schemas into (component references to) JSON Schemas. */
export const webhooks = (toJson: (schema: z.ZodType, io: 'input' | 'output') => OpenApiObject): Record<string, OpenApiObject> => ({
  taskFinished: {
    post: {
      tags: ['Webhooks'],
      operationId: 'taskFinishedWebhook',
      summary: 'A task completed or failed',
      // The service sends no credentials: the receiver authenticates the request by its signature.
      security: [],
      description:
        "Sent by the service to the task's `callback_url` when the task reaches status 20 (completed) or 30 (failed); never for " +
        '40 (cancelled) and never without a `callback_url`.\n\n' +
        'Verify it: compute HMAC-SHA256 over the exact request body bytes with your webhook secret (console: ' +
        '`GET /api/webhook-secret`) and compare, in constant time, with `X-Signature` (lowercase hex); reject stale ' +
        '`X-Timestamp` values. The body is signed at send time with the current secret, so after a rotation retries carry ' +
        'the new secret\'s signature.\n\n' +
        'Delivery fails on a timeout (10 s by default), a connection or TLS failure, or any non-2xx status (redirects are not ' +
        'followed). Retries follow 1 min, 5 min, 30 min, 2 h and 6 h after the previous attempt; after 5 failed retries the ' +
        'delivery is given up. The same delivery keeps its `webhook-id` across retries.',
      parameters: [
        headerParam('X-Signature', 'Lowercase hex HMAC-SHA256 of the exact body bytes, keyed with the account\'s current webhook secret.', 'a3f1c29e0b7d4e5f8a6b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f'),
        headerParam('X-Timestamp', 'Unix time in seconds when this attempt was sent.', 1767225600, 'integer'),
        headerParam('webhook-id', 'Standard Webhooks: delivery id, stable across retries (for de-duplication).', 'whd_2Pq8Rt5Yu1Io7Lk3Jh9Gf4'),
        headerParam('webhook-timestamp', 'Standard Webhooks: unix seconds when sent.', 1767225600, 'integer'),
        headerParam('webhook-signature', 'Standard Webhooks signature(s) (`v1,<base64>`), for verification with standard libraries.', 'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4='),
        headerParam('X-Webhook-Attempt', '1 for the first attempt, 2 for the first retry, and so on.', 1, 'integer'),
      ],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: toJson(webhookEventSchema, 'output'),
            examples: {
              completed: { summary: 'Image generation completed', value: { public_id: 'task_3kT9xQ2mLp7Vn4Rb8Yc1Zd', status: 20, error_code: null, payload: { order_id: 'A-1002' } } },
              failed: { summary: 'Video generation failed', value: { public_id: 'task_8Ws2Ed4Rf6Tg8Yh1Uj3Ik5', status: 30, error_code: 'engine_error', payload: null } },
              faces: {
                summary: 'Face detection completed',
                value: {
                  public_id: 'task_1Az2Sx3Dc4Fv5Gb6Hn7Jm8',
                  status: 20,
                  error_code: null,
                  payload: null,
                  result: { face_coordinates: [{ x: 120, y: 64, width: 88, height: 96, score: 0.97 }] },
                },
              },
            },
          },
        },
      },
      responses: {
        '2XX': { description: 'Any 2xx status acknowledges the delivery; the response body is ignored.' },
        default: { description: 'Anything else (or no answer within the timeout) is a failed attempt and is retried.' },
      },
    },
  },
});
