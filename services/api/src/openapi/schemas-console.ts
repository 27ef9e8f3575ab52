// Component schemas of the console (session) API and the operational endpoints.
import { schema, type OpenApiObject } from './refs';

const nullableTime = (description: string): OpenApiObject => ({ type: ['string', 'null'], format: 'date-time', description });
const KEY_PREFIX: OpenApiObject = {
  type: 'string',
  description: 'The type prefix plus the first 8 characters of the key body.',
  example: 'sk-live-Ab12Cd34',
};
const PLAINTEXT_KEY: OpenApiObject = {
  type: 'string',
  pattern: '^sk-(live|test)-[A-Za-z0-9]{32,}$',
  description: 'The full API key (`sk-live-` paid, `sk-test-` trial). Send it as `X-Api-Key`.',
  example: 'sk-live-Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90',
};
const GRANT_ID: OpenApiObject = { type: 'string', pattern: '^grant_[A-Za-z0-9]{22}$', example: 'grant_7Hq2Lm9Xc4Vb1Nz8Kp3Rt6' };

export const consoleSchemas: Record<string, OpenApiObject> = {
  LoginRequest: {
    type: 'object',
    additionalProperties: false,
    required: ['email', 'password'],
    properties: {
      email: { type: 'string', minLength: 1, maxLength: 254, description: 'Compared trimmed and lower-cased.', example: 'dev@example.com' },
      password: { type: 'string', minLength: 1, maxLength: 1024, format: 'password' },
    },
  },
  LoginResponse: {
    type: 'object',
    required: ['token', 'expires_at'],
    properties: {
      token: { type: 'string', description: 'HS256 JWT; send as `Authorization: Bearer <token>`. The same value is set as the `session` cookie.' },
      expires_at: { type: 'string', format: 'date-time', description: '12 hours after login.' },
    },
  },
  LoginRateLimited: {
    allOf: [
      schema('Error'),
      {
        type: 'object',
        required: ['retry_after'],
        properties: {
          message: { const: 'Too many login attempts. Try again later.' },
          retry_after: { type: 'integer', minimum: 1, description: 'Seconds until the 15-minute window that blocked the attempt ends.' },
        },
      },
    ],
  },
  Session: {
    type: 'object',
    required: ['account_id', 'email', 'expires_at'],
    properties: {
      account_id: { type: 'string', pattern: '^acct_[A-Za-z0-9]{22}$' },
      email: { type: 'string', format: 'email' },
      expires_at: { type: 'string', format: 'date-time' },
    },
  },
  ApiKey: {
    type: 'object',
    description: 'An API key as the console shows it; never the plaintext.',
    required: ['id', 'type', 'key_prefix', 'status', 'grant_id', 'created_at', 'last_used_at', 'revoked_at'],
    properties: {
      id: { type: 'string', pattern: '^key_[A-Za-z0-9]{22}$', example: 'key_5Jd8Qw2Er6Ty1Ui9Op3As7' },
      type: { type: 'string', enum: ['paid', 'trial'] },
      key_prefix: KEY_PREFIX,
      status: {
        type: 'string',
        enum: ['active', 'revoked', 'expired'],
        description: '`revoked` once revoked (or replaced by reissue); `expired` when the trial grant has expired.',
      },
      grant_id: { ...GRANT_ID, type: ['string', 'null'], description: 'The trial grant the key draws on; `null` for paid keys.' },
      created_at: { type: 'string', format: 'date-time' },
      last_used_at: nullableTime('Last accepted request (accurate to about a minute); `null` if never used.'),
      revoked_at: nullableTime('`null` unless revoked.'),
    },
  },
  ApiKeyList: {
    type: 'object',
    required: ['data'],
    properties: { data: { type: 'array', items: schema('ApiKey'), description: 'Newest first.' } },
  },
  CreateApiKeyRequest: {
    description: 'A paid key (draws on the paid balance, never expires) or a trial key bound to one trial grant.',
    oneOf: [
      { title: 'paid', type: 'object', additionalProperties: false, required: ['type'], properties: { type: { const: 'paid' } } },
      {
        title: 'trial',
        type: 'object',
        additionalProperties: false,
        required: ['type', 'grant_id'],
        properties: { type: { const: 'trial' }, grant_id: GRANT_ID },
      },
    ],
  },
  CreatedApiKey: {
    type: 'object',
    required: ['key', 'plaintext_key'],
    properties: { key: schema('ApiKey'), plaintext_key: PLAINTEXT_KEY },
  },
  ReissuedApiKey: {
    type: 'object',
    required: ['key', 'plaintext_key', 'replaced_key'],
    properties: {
      key: schema('ApiKey'),
      plaintext_key: PLAINTEXT_KEY,
      replaced_key: { ...schema('ApiKey'), description: 'The old key, now revoked.' },
    },
  },
  RevealedApiKey: {
    type: 'object',
    required: ['plaintext_key'],
    properties: { plaintext_key: PLAINTEXT_KEY },
  },
  TrialGrant: {
    type: 'object',
    required: ['id', 'quota_total', 'quota_remaining', 'expires_at', 'created_at', 'usable', 'bound_key_id', 'bound_key_prefix'],
    properties: {
      id: GRANT_ID,
      quota_total: { type: 'integer', example: 100 },
      quota_remaining: { type: 'integer', example: 42 },
      expires_at: { type: 'string', format: 'date-time' },
      created_at: { type: 'string', format: 'date-time' },
      usable: { type: 'boolean', description: 'Unexpired with quota left: it can pay for tasks and bind a key.' },
      bound_key_id: { type: ['string', 'null'], description: 'The unrevoked key bound to this (unexpired) grant, if any.' },
      bound_key_prefix: { ...KEY_PREFIX, type: ['string', 'null'], example: 'sk-test-Ab12Cd34' },
    },
  },
  TrialGrantList: {
    type: 'object',
    required: ['data'],
    properties: { data: { type: 'array', items: schema('TrialGrant'), description: 'Newest first.' } },
  },
  CreditBalance: {
    type: 'object',
    required: ['paid_balance', 'trial_grants'],
    properties: {
      paid_balance: { type: 'integer', description: 'Credits available to paid keys.', example: 1250 },
      trial_grants: { type: 'array', items: schema('TrialGrant'), description: 'Every trial grant of the account, newest first.' },
    },
  },
  WebhookSecret: {
    type: 'object',
    required: ['webhook_secret', 'rotated_at'],
    properties: {
      webhook_secret: {
        type: 'string',
        pattern: '^whsec_[A-Za-z0-9+/]{43}=$',
        description: '`whsec_` + base64 of 32 random bytes (Standard Webhooks format). Keys the `X-Signature` HMAC of webhooks.',
        example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw8Ybk5AS2BYA=',
      },
      rotated_at: { type: 'string', format: 'date-time' },
    },
  },
  WebhookAttempt: {
    type: 'object',
    required: ['attempt_number', 'started_at', 'duration_ms', 'status_code', 'error', 'response_excerpt'],
    properties: {
      attempt_number: { type: 'integer', minimum: 1, description: 'Also sent as `X-Webhook-Attempt`.' },
      started_at: { type: 'string', format: 'date-time' },
      duration_ms: { type: 'integer', minimum: 0 },
      status_code: { type: ['integer', 'null'], description: "The receiver's HTTP status; null when no response arrived." },
      error: {
        type: ['string', 'null'],
        description: 'Why the attempt failed (`HTTP 500`, `timed out`, a connection, TLS or destination error); null on success.',
        example: 'HTTP 500',
      },
      response_excerpt: { type: ['string', 'null'], description: "The first 500 characters of the receiver's response body." },
    },
  },
  WebhookDelivery: {
    type: 'object',
    required: ['id', 'public_id', 'url', 'task_status', 'state', 'attempt_count', 'next_attempt_at', 'created_at', 'completed_at', 'attempts'],
    properties: {
      id: { type: 'string', pattern: '^whd_[A-Za-z0-9]{22}$', description: 'Also sent as `webhook-id` (stable across retries).' },
      public_id: { type: 'string', description: 'The task.' },
      url: { type: 'string', format: 'uri', description: "The task's `callback_url`." },
      task_status: { type: 'integer', enum: [20, 30], description: 'The terminal status the webhook announces.' },
      state: {
        type: 'string',
        enum: ['pending', 'succeeded', 'failed'],
        description: '`pending` while attempts remain; `failed` after the last scheduled retry failed (given up).',
      },
      attempt_count: { type: 'integer', minimum: 0 },
      next_attempt_at: { type: ['string', 'null'], format: 'date-time', description: 'When the next attempt is due (pending only).' },
      created_at: { type: 'string', format: 'date-time' },
      completed_at: { type: ['string', 'null'], format: 'date-time' },
      attempts: { type: 'array', items: schema('WebhookAttempt'), description: 'Every attempt, oldest first.' },
    },
  },
  WebhookDeliveryList: {
    type: 'object',
    required: ['data'],
    properties: { data: { type: 'array', items: schema('WebhookDelivery'), description: 'Newest first.' } },
  },
  ResentWebhookDelivery: {
    type: 'object',
    required: ['delivery'],
    properties: { delivery: schema('WebhookDelivery') },
  },
  Health: {
    type: 'object',
    required: ['status'],
    properties: { status: { const: 'ok' } },
  },
  Draining: {
    type: 'object',
    description: 'Readiness while the API shuts down: load balancers should stop sending.',
    required: ['status'],
    properties: { status: { type: 'string', enum: ['draining'] } },
  },
  Readiness: {
    type: 'object',
    required: ['status', 'checks'],
    properties: {
      status: { type: 'string', enum: ['ready', 'not_ready'] },
      checks: {
        type: 'object',
        required: ['database', 'redis'],
        properties: {
          database: { type: 'string', enum: ['ok', 'unavailable'] },
          redis: { type: 'string', enum: ['ok', 'unavailable'] },
        },
      },
    },
  },
};
