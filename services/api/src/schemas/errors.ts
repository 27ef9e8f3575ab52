// Bodies of error responses. Which code answers with which body is declared in `src/errors.ts`
// (messages) and per route (which codes it can give).
import { z } from 'zod';
import { API_ERRORS } from '../errors';

export const errorSchema = z
  .object({ message: z.string().meta({ example: `${API_ERRORS.TASK_NOT_FOUND.message}` }) })
  .meta({ id: 'Error', description: 'Every error body has a human-readable `message`; some add fields (see the more specific schemas).' });

export const fieldErrorSchema = z.object({
  field: z.string().meta({
    description: 'The body field (a path when nested: `tasks[3].prompt`), query parameter or header; `Request body` for the body as a whole.',
    example: 'prompt',
  }),
  message: z.string().meta({ description: 'What is wrong with it, as a sentence naming it.', example: 'prompt must not be empty' }),
});

export const validationErrorSchema = errorSchema
  .extend({ errors: z.array(fieldErrorSchema).min(1) })
  .meta({ id: 'ValidationError', description: 'A 400 from request validation: the first problem in `message`, one entry per problem in `errors`.' });

export const expiredTrialKeySchema = errorSchema
  .extend({
    message: z.literal(API_ERRORS.TRIAL_KEY_EXPIRED.message),
    active_key_prefixes: z.array(z.string().meta({ example: 'sk-test-Ab12Cd34' })).meta({
      description: "`key_prefix` of each of the account's other trial keys that still work (unrevoked, grant unexpired).",
    }),
  })
  .meta({ id: 'ExpiredTrialKey', description: 'A trial key whose grant has expired.' });

export const rateLimitedSchema = errorSchema
  .extend({
    message: z.literal(API_ERRORS.RATE_LIMITED.message),
    limit: z.int().meta({ description: 'The exceeded limit (requests per window).', example: 300 }),
    window: z.enum(['minute', 'day']).meta({ description: '`minute`: sliding 60 s; `day`: rolling 24 h in hourly buckets.' }),
    retry_after: z.int().min(1).meta({ description: 'Seconds until a request can be accepted (same as `Retry-After`).', example: 12 }),
  })
  .meta({ id: 'RateLimited' });

export const insufficientCreditsSchema = errorSchema
  .extend({
    message: z.literal(API_ERRORS.INSUFFICIENT_CREDITS.message),
    required: z.int().meta({ description: 'The task cost.', example: 10 }),
    available: z.int().meta({ description: 'Paid balance (paid key) or grant quota remaining (trial key).', example: 3 }),
  })
  .meta({ id: 'InsufficientCredits' });

export const spendLimitReachedSchema = errorSchema
  .extend({
    message: z.literal(API_ERRORS.SPEND_LIMIT_REACHED.message),
    limit: z.int().meta({ description: "The key's spend limit (credits per period).", example: 500 }),
    period: z.enum(['day', 'month']).meta({ description: 'The period the limit counts over (UTC day or month).' }),
    spent: z.int().meta({ description: 'Credits the key has spent in the current period (refunds deducted).', example: 496 }),
  })
  .meta({ id: 'SpendLimitReached', description: "A creation that would take the key's spend past its limit. Comes before `Insufficient credits.`." });

export const batchExceedsRateLimitSchema = errorSchema
  .extend({
    limit: z.int().meta({ description: 'The window that can never hold the batch (requests per window).', example: 20 }),
    window: z.enum(['minute', 'day']),
  })
  .meta({ id: 'BatchExceedsRateLimit', description: 'A batch larger than the key can ever send in one window: split it. Not counted; no `Retry-After`.' });
