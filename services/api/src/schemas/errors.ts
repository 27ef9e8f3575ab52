// Bodies of error responses. Which code answers with which body is declared in `src/errors.ts`
// (messages) and per route (which codes it can give).
import { z } from 'zod';
import { API_ERRORS } from '../errors';

export const errorSchema = z
  .object({ message: z.string().meta({ example: `${API_ERRORS.TASK_NOT_FOUND.message}` }) })
  .meta({ id: 'Error', description: 'Every error body has a human-readable `message`; some add fields (see the more specific schemas).' });

export const fieldErrorSchema = z.object({
  field: z.string().meta({
    description: 'The body field (a dotted path when nested: `files.0.name`), query parameter or header; `Request body` for the body as a whole.',
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
