// The console (session) API: login, API keys, trial grants, credits, the webhook secret and the
// webhook delivery log. Request schemas (`LoginRequest`, `CreateApiKeyRequest`, the list queries)
// are what the routes validate with, so their error messages are part of the API; response schemas
// describe what the routes send and the contract tests parse real responses with them.
import { z } from 'zod';
import { isId } from '@taskapi/ids';
import { nullableTimestamp, prefixedId, timestamp } from './common';
import { errorSchema } from './errors';

const KEY_PREFIX_DESCRIPTION = 'The type prefix plus the first 8 characters of the key body.';
const GRANT_ID_PATTERN = '^grant_[A-Za-z0-9]{22}$';
const GRANT_ID_EXAMPLE = 'grant_7Hq2Lm9Xc4Vb1Nz8Kp3Rt6';
const KEY_TYPES = ['paid', 'trial'] as const;

const keyPrefix = z.string().meta({ description: KEY_PREFIX_DESCRIPTION, example: 'sk-live-Ab12Cd34' });

const plaintextKey = z
  .string()
  .regex(/^sk-(live|test)-[A-Za-z0-9]{32,}$/)
  .meta({
    description: 'The full API key (`sk-live-` paid, `sk-test-` trial). Send it as `X-Api-Key`.',
    example: 'sk-live-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90',
  });

const grantId = prefixedId('grant', GRANT_ID_EXAMPLE);

// ---------------------------------------------------------------------------------------------
// Login and session

export const loginRequestSchema = z
  .strictObject(
    {
      email: z
        .string()
        .min(1, { error: 'must not be empty' })
        .max(254)
        .meta({ description: 'Compared trimmed and lower-cased.', example: 'dev@example.com' }),
      password: z
        .string()
        .min(1, { error: 'must not be empty' })
        .max(1024)
        .meta({ format: 'password' }),
    },
    { error: 'must be a JSON object' },
  )
  .meta({ id: 'LoginRequest' });

export type LoginRequest = z.infer<typeof loginRequestSchema>;

export const loginResponseSchema = z
  .object({
    token: z
      .string()
      .meta({ description: 'HS256 JWT; send as `Authorization: Bearer <token>`. The same value is set as the `session` cookie.' }),
    expires_at: timestamp('12 hours after login.'),
  })
  .meta({ id: 'LoginResponse' });

export type LoginResponseView = z.infer<typeof loginResponseSchema>;

export const loginRateLimitedSchema = errorSchema
  .extend({
    message: z.literal('Too many login attempts. Try again later.'),
    retry_after: z.int().min(1).meta({
      description:
        'Seconds until the attempt may be retried: the end of the 15-minute window that blocked it, or 1 while another ' +
        'attempt from this address for this e-mail is running.',
    }),
  })
  .meta({ id: 'LoginRateLimited' });

export type LoginRateLimitedView = z.infer<typeof loginRateLimitedSchema>;

export const sessionSchema = z
  .object({
    account_id: prefixedId('account', 'acct_2Wc8Nv5Lp1Qx7Rb4Ty9Zs3'),
    // Not `z.email()`: stored addresses only have to pass accounts.ts's simpler EMAIL_PATTERN.
    email: z.string().meta({ format: 'email' }),
    api_version: z.iso.date().meta({
      description: 'The API version pinned to the account: requests that send no `TaskApi-Version` header get this version.',
      example: '2026-11-01',
    }),
    expires_at: timestamp(),
  })
  .meta({ id: 'Session' });

export type SessionView = z.infer<typeof sessionSchema>;

// ---------------------------------------------------------------------------------------------
// API keys

const SPEND_CREDITS = 'must be an integer from 1 to 1000000000';

export const spendLimitSchema = z
  .strictObject(
    {
      credits: z
        .number({ error: SPEND_CREDITS })
        .int({ error: SPEND_CREDITS })
        .min(1, { error: SPEND_CREDITS })
        .max(1_000_000_000, { error: SPEND_CREDITS })
        .meta({ description: 'Most credits the key may spend per period.', example: 500 }),
      period: z.enum(['day', 'month'], { error: 'must be "day" or "month"' }).meta({ description: 'The current UTC day or the current UTC month.' }),
    },
    { error: (issue) => (issue.input === undefined ? 'is required' : 'must be an object {"credits","period"} or null') },
  )
  .meta({
    id: 'SpendLimit',
    description:
      'Most credits the key may spend per UTC day or month (refunds deducted from the period of their charge). A creation that ' +
      'would pass it is refused with 402 `This key\'s spend limit is reached.`',
  });

export const apiKeySchema = z
  .object({
    id: prefixedId('key', 'key_5Jd8Qw2Er6Ty1Ui9Op3As7'),
    type: z.enum(KEY_TYPES),
    key_prefix: keyPrefix,
    status: z.enum(['active', 'revoked', 'expired']).meta({
      description: '`revoked` once revoked (or replaced by reissue); `expired` when the trial grant has expired.',
    }),
    grant_id: grantId.nullable().meta({ description: 'The trial grant the key draws on; `null` for paid keys.' }),
    created_at: timestamp(),
    last_used_at: nullableTimestamp('Last accepted request (accurate to about a minute); `null` if never used.'),
    revoked_at: nullableTimestamp('`null` unless revoked.'),
    spend_limit: spendLimitSchema.nullable().meta({ description: 'The key\'s spend limit; `null`: none.' }),
    spent: z.int().min(0).meta({
      description:
        'Credits charged through the key in the current UTC period of its limit (the month when it has none), refunds deducted. ' +
        'A reissued key continues the count of the key it replaced.',
      example: 120,
    }),
  })
  .meta({ id: 'ApiKey', description: 'An API key as the console shows it; never the plaintext.' });

export type ApiKeyView = z.infer<typeof apiKeySchema>;

export const apiKeyListSchema = z
  .object({ data: z.array(apiKeySchema).meta({ description: 'Newest first.' }) })
  .meta({ id: 'ApiKeyList' });

export type ApiKeyListView = z.infer<typeof apiKeyListSchema>;

/** `GET /api/keys` query. */
export const listKeysQuerySchema = z.strictObject({
  type: z.enum(KEY_TYPES, { error: 'must be "paid" or "trial"' }).optional().meta({ description: 'Only keys of this type.' }),
});

export type ListKeysQuery = z.infer<typeof listKeysQuerySchema>;

export const createApiKeyRequestSchema = z
  .discriminatedUnion(
    'type',
    [
      z.strictObject({ type: z.literal('paid'), spend_limit: spendLimitSchema.nullable().optional() }).meta({ title: 'paid' }),
      z
        .strictObject({
          type: z.literal('trial'),
          grant_id: z
            .string({ error: 'is required for trial keys' })
            .refine((v) => isId('grant', v), { error: 'is not a trial grant id' })
            // The refine above is the check; these only document it.
            .meta({ pattern: GRANT_ID_PATTERN, example: GRANT_ID_EXAMPLE }),
          spend_limit: spendLimitSchema.nullable().optional(),
        })
        .meta({ title: 'trial' }),
    ],
    { error: 'must be "paid" or "trial"' },
  )
  .meta({
    id: 'CreateApiKeyRequest',
    description: 'A paid key (draws on the paid balance, never expires) or a trial key bound to one trial grant.',
  });

export type CreateApiKeyRequest = z.infer<typeof createApiKeyRequestSchema>;

export const updateApiKeyRequestSchema = z
  .strictObject({ spend_limit: spendLimitSchema.nullable() }, { error: 'must be a JSON object' })
  .meta({ id: 'UpdateApiKeyRequest', description: '`spend_limit`: the new limit, or `null` to remove it.' });

export type UpdateApiKeyRequest = z.infer<typeof updateApiKeyRequestSchema>;

export const createdApiKeySchema = z
  .object({ key: apiKeySchema, plaintext_key: plaintextKey })
  .meta({ id: 'CreatedApiKey' });

export type CreatedApiKeyView = z.infer<typeof createdApiKeySchema>;

export const reissuedApiKeySchema = z
  .object({
    key: apiKeySchema,
    plaintext_key: plaintextKey,
    replaced_key: apiKeySchema.meta({ description: 'The old key, now revoked.' }),
  })
  .meta({ id: 'ReissuedApiKey' });

export type ReissuedApiKeyView = z.infer<typeof reissuedApiKeySchema>;

export const revealedApiKeySchema = z.object({ plaintext_key: plaintextKey }).meta({ id: 'RevealedApiKey' });

export type RevealedApiKeyView = z.infer<typeof revealedApiKeySchema>;

// ---------------------------------------------------------------------------------------------
// Trial grants and credits

export const trialGrantSchema = z
  .object({
    id: grantId,
    quota_total: z.int().meta({ example: 100 }),
    quota_remaining: z.int().meta({ example: 42 }),
    expires_at: timestamp(),
    created_at: timestamp(),
    usable: z.boolean().meta({ description: 'Unexpired with quota left: it can pay for tasks and bind a key.' }),
    bound_key_id: z.string().nullable().meta({ description: 'The unrevoked key bound to this (unexpired) grant, if any.' }),
    bound_key_prefix: z.string().nullable().meta({ description: KEY_PREFIX_DESCRIPTION, example: 'sk-test-Ab12Cd34' }),
  })
  .meta({ id: 'TrialGrant' });

export type TrialGrantView = z.infer<typeof trialGrantSchema>;

export const trialGrantListSchema = z
  .object({ data: z.array(trialGrantSchema).meta({ description: 'Newest first.' }) })
  .meta({ id: 'TrialGrantList' });

export type TrialGrantListView = z.infer<typeof trialGrantListSchema>;

export const creditBalanceSchema = z
  .object({
    paid_balance: z.int().meta({ description: 'Credits available to paid keys.', example: 1250 }),
    trial_grants: z.array(trialGrantSchema).meta({ description: 'Every trial grant of the account, newest first.' }),
  })
  .meta({ id: 'CreditBalance' });

export type CreditBalanceView = z.infer<typeof creditBalanceSchema>;

// ---------------------------------------------------------------------------------------------
// Webhooks

export const webhookSecretSchema = z
  .object({
    webhook_secret: z
      .string()
      .regex(/^whsec_[A-Za-z0-9+/]{43}=$/)
      .meta({
        description: '`whsec_` + base64 of 32 random bytes (Standard Webhooks format). Keys the `X-Signature` HMAC of webhooks.',
        example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw8Ybk5AS2BYA=',
      }),
    rotated_at: timestamp(),
  })
  .meta({ id: 'WebhookSecret' });

export type WebhookSecretView = z.infer<typeof webhookSecretSchema>;

export const webhookAttemptSchema = z
  .object({
    attempt_number: z.int().min(1).meta({ description: 'Also sent as `X-Webhook-Attempt`.' }),
    started_at: timestamp(),
    duration_ms: z.int().min(0),
    status_code: z.int().nullable().meta({ description: "The receiver's HTTP status; null when no response arrived." }),
    error: z.string().nullable().meta({
      description: 'Why the attempt failed (`HTTP 500`, `timed out`, a connection, TLS or destination error); null on success.',
      example: 'HTTP 500',
    }),
    response_excerpt: z.string().nullable().meta({ description: "The first 500 characters of the receiver's response body." }),
    trace_id: z.string().nullable().meta({
      description: "The attempt's W3C trace id (the task's trace; its `traceparent` was sent with the webhook); null with tracing off.",
      example: '4bf92f3577b34da6a3ce929d0e0e4736',
    }),
  })
  .meta({ id: 'WebhookAttempt' });

export type WebhookAttemptView = z.infer<typeof webhookAttemptSchema>;

export const webhookDeliverySchema = z
  .object({
    id: prefixedId('delivery', 'whd_8Hs2Kd9Lq4Wm1Xn7Bv3Cz6').meta({ description: 'Also sent as `webhook-id` (stable across retries).' }),
    public_id: z.string().meta({ description: 'The task.' }),
    url: z.url().meta({ description: "The task's `callback_url`." }),
    task_status: z.literal([20, 30]).meta({ description: 'The terminal status the webhook announces.' }),
    state: z.enum(['pending', 'succeeded', 'failed']).meta({
      description: '`pending` while attempts remain; `failed` after the last scheduled retry failed (given up).',
    }),
    attempt_count: z.int().min(0),
    next_attempt_at: nullableTimestamp('When the next attempt is due (pending only).'),
    created_at: timestamp(),
    completed_at: timestamp().nullable(),
    attempts: z.array(webhookAttemptSchema).meta({ description: 'Every attempt, oldest first.' }),
  })
  .meta({ id: 'WebhookDelivery' });

export type WebhookDeliveryView = z.infer<typeof webhookDeliverySchema>;

export const webhookDeliveryListSchema = z
  .object({ data: z.array(webhookDeliverySchema).meta({ description: 'Newest first.' }) })
  .meta({ id: 'WebhookDeliveryList' });

export type WebhookDeliveryListView = z.infer<typeof webhookDeliveryListSchema>;

export const resentWebhookDeliverySchema = z.object({ delivery: webhookDeliverySchema }).meta({ id: 'ResentWebhookDelivery' });

export type ResentWebhookDeliveryView = z.infer<typeof resentWebhookDeliverySchema>;

const LIMIT_ERROR = { error: 'must be an integer from 1 to 100' };

/** `GET /api/webhook-deliveries` query. */
export const listDeliveriesQuerySchema = z.strictObject({
  public_id: z
    .string()
    .max(64, { error: 'must be a task id' })
    .optional()
    .meta({ description: 'Only the deliveries of this task.', example: 'task_3kT9xQ2mLp7Vn4Rb8Yc1Zd' }),
  limit: z
    .string()
    .regex(/^\d+$/, LIMIT_ERROR)
    // A query parameter arrives as a string; for `io: 'input'` document it as the integer it must spell.
    .meta({ type: 'integer', minimum: 1, maximum: 100, default: 20 })
    .transform(Number)
    .pipe(z.number().int().min(1, LIMIT_ERROR).max(100, LIMIT_ERROR))
    .default(20)
    .meta({ description: 'Page size.' }),
});

export type ListDeliveriesQuery = z.infer<typeof listDeliveriesQuerySchema>;
