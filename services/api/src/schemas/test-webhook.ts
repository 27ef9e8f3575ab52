import { httpsUrl, TASK_KINDS } from '@taskapi/task-kinds';
import { z } from 'zod';

export const sendTestWebhookRequestSchema = z
  .strictObject({
    url: httpsUrl.meta({ description: 'The receiver: an `https://` URL, checked like `callback_url`.', example: 'https://example.com/webhooks/taskapi' }),
    kind: z
      .enum(TASK_KINDS, { error: `must be one of ${TASK_KINDS.join(', ')}` })
      .optional()
      .meta({ description: 'Which task kind the sample is (it decides whether the body has `result`). Default: the first kind.' }),
  })
  .meta({ id: 'SendTestWebhookRequest' });

export const testWebhookResultSchema = z
  .object({
    public_id: z.string().meta({ description: 'The sample task id sent: the shape of a real id, starting `task_test`.', example: 'task_testQ8f2Lm9Xc4Vb1Nz8Kp' }),
    status_code: z.int().nullable().meta({ description: "The receiver's HTTP status; null when no answer came.", example: 204 }),
    duration_ms: z.int().meta({ description: 'From sending to the end of the answer (or the failure).', example: 84 }),
    error: z.string().nullable().meta({
      description: 'Null on a 2xx. Otherwise why: `HTTP <status>`, a refused destination (private address), a redirect, a timeout, a TLS failure.',
      example: null,
    }),
    response_excerpt: z.string().nullable().meta({ description: 'The first 1 KB of the answer as text; null when empty.', example: 'ok' }),
  })
  .meta({ id: 'TestWebhookResult' });
