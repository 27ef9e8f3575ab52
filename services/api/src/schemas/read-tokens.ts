// Browser read tokens (docs/api.md, "Browser read tokens"): what minting takes and answers.
import { z } from 'zod';

/** The lifetimes a read token may have, in seconds. */
export const READ_TOKEN_TTL = { min: 60, max: 86_400, default: 900 } as const;

export const readTokenRequestSchema = z
  .object({
    ttl_seconds: z
      .number({ error: `must be an integer from ${READ_TOKEN_TTL.min} to ${READ_TOKEN_TTL.max}` })
      .int({ error: `must be an integer from ${READ_TOKEN_TTL.min} to ${READ_TOKEN_TTL.max}` })
      .min(READ_TOKEN_TTL.min, { error: `must be an integer from ${READ_TOKEN_TTL.min} to ${READ_TOKEN_TTL.max}` })
      .max(READ_TOKEN_TTL.max, { error: `must be an integer from ${READ_TOKEN_TTL.min} to ${READ_TOKEN_TTL.max}` })
      .optional()
      .meta({ description: `How long the token reads the task, in seconds (${READ_TOKEN_TTL.min} to ${READ_TOKEN_TTL.max}; default ${READ_TOKEN_TTL.default}).`, example: 900 }),
  })
  .strict()
  .optional()
  .meta({ id: 'ReadTokenRequest' });

export const readTokenSchema = z
  .object({
    token: z.string().meta({ description: 'The read token: URL-safe, carrying neither the API key nor any secret of the account.', example: 'trt_9b3Jx0c1q2Zr4Yk8uVb6mN5pQ7sT1wE3rA0dF2gH4jK6lZ8xC0vB' }),
    expires_at: z.iso.datetime().meta({ description: 'When it stops reading the task (earlier when its trial grant ends first).', example: '2026-01-01T00:15:00.000Z' }),
  })
  .meta({ id: 'ReadToken' });

/** `?access_token=`: the token for a request that cannot send headers (an `EventSource`). */
export const accessTokenQuery = z
  .object({ access_token: z.string().optional().meta({ description: 'The read token, when `Authorization: Bearer` cannot be sent (an `EventSource`). Never logged.' }) })
  .loose();
