// Webhook deliveries (`webhook_deliveries`, `webhook_attempts`): raw SQL on the pg pool. The
// dispatcher writes them (its own queries); the API lists them with their attempts in one
// statement and reopens finished ones for a manual resend. An attempt the dispatcher has claimed but
// not recorded yet (in_flight) is not listed: it has no result to show; `attempt_count` counts it.
import type pg from 'pg';
import { z } from 'zod';
import { queryFirst, queryRows, statement } from '@taskapi/db';

const SELECT_DELIVERIES = `
SELECT d.id, t.public_id, d.url, d.task_status, d.state::text AS state, d.attempt_count,
       d.next_attempt_at, d.created_at, d.completed_at,
       COALESCE((SELECT json_agg(json_build_object(
                   'attempt_number', a.attempt_number, 'started_at', a.started_at, 'duration_ms', a.duration_ms,
                   'status_code', a.status_code, 'error', a.error, 'response_excerpt', a.response_excerpt,
                   'trace_id', a.trace_id)
                   ORDER BY a.attempt_number)
                   FROM webhook_attempts a WHERE a.delivery_id = d.id AND NOT a.in_flight), '[]'::json) AS attempts
  FROM webhook_deliveries d
  JOIN tasks t ON t.id = d.task_id`;

const deliveryState = z.enum(['pending', 'succeeded', 'failed']);

const deliveryRow = z.object({
  id: z.string(),
  /** The task's public id. */
  public_id: z.string(),
  url: z.string(),
  task_status: z.number(),
  state: deliveryState,
  attempt_count: z.number(),
  next_attempt_at: z.date().nullable(),
  created_at: z.date(),
  completed_at: z.date().nullable(),
  /** Every attempt, in order. Built as JSON, so `started_at` is PostgreSQL's timestamp text. */
  attempts: z.array(
    z.object({
      attempt_number: z.number(),
      started_at: z.string(),
      duration_ms: z.number(),
      status_code: z.number().nullable(),
      error: z.string().nullable(),
      response_excerpt: z.string().nullable(),
      trace_id: z.string().nullable(),
    }),
  ),
});

/** A delivery with its attempts. */
export type DeliveryRow = z.output<typeof deliveryRow>;

const LIST_DELIVERIES = statement(
  'list-webhook-deliveries',
  `${SELECT_DELIVERIES}
            WHERE d.account_id = $1 AND ($2::text IS NULL OR t.public_id = $2)
            ORDER BY d.created_at DESC, d.id DESC LIMIT $3`,
  deliveryRow,
);

const GET_DELIVERY = statement('get-webhook-delivery', `${SELECT_DELIVERIES} WHERE d.account_id = $1 AND d.id = $2`, deliveryRow);

// Reopens a finished delivery, due now; a pending one is left alone (attempt_count comes back null).
const REOPEN_DELIVERY = statement(
  'resend-webhook-delivery',
  `WITH target AS (
             SELECT id, state FROM webhook_deliveries WHERE id = $1 AND account_id = $2
           ), upd AS (
             UPDATE webhook_deliveries d
                SET state = 'pending', next_attempt_at = now(), completed_at = NULL
               FROM target
              WHERE d.id = target.id AND target.state <> 'pending'
             RETURNING d.attempt_count
           )
           SELECT target.state::text AS state, (SELECT attempt_count FROM upd) AS attempt_count FROM target`,
  z.object({
    /** The state before the statement. */
    state: deliveryState,
    /** Attempts made so far, when the delivery was reopened; null when it was pending already. */
    attempt_count: z.number().nullable(),
  }),
);

export type ReopenedDeliveryRow = z.output<typeof REOPEN_DELIVERY.row>;

export class DeliveryRepository {
  constructor(private readonly pool: pg.Pool) {}

  /** The account's deliveries, newest first; only those of one task when `publicId` is set. */
  list(accountId: string, opts: { publicId?: string; limit: number }): Promise<DeliveryRow[]> {
    return queryRows(this.pool, LIST_DELIVERIES, [accountId, opts.publicId ?? null, opts.limit]);
  }

  get(accountId: string, deliveryId: string): Promise<DeliveryRow | null> {
    return queryFirst(this.pool, GET_DELIVERY, [accountId, deliveryId]);
  }

  /** Makes a finished delivery pending and due now; null when the account has no such delivery. */
  reopen(accountId: string, deliveryId: string): Promise<ReopenedDeliveryRow | null> {
    return queryFirst(this.pool, REOPEN_DELIVERY, [deliveryId, accountId]);
  }
}
