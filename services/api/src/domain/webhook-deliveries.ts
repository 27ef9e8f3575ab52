import type pg from 'pg';
import type { Logger } from '@taskapi/logger';
import type { WebhookQueue } from '@taskapi/queue';
import { ApiError } from '../errors';

export interface AttemptView {
  attempt_number: number;
  started_at: string;
  duration_ms: number;
  status_code: number | null;
  error: string | null;
  response_excerpt: string | null;
}

export interface DeliveryView {
  id: string;
  public_id: string;
  url: string;
  task_status: number;
  state: 'pending' | 'succeeded' | 'failed';
  attempt_count: number;
  next_attempt_at: string | null;
  created_at: string;
  completed_at: string | null;
  attempts: AttemptView[];
}

interface DeliveryRow {
  id: string;
  public_id: string;
  url: string;
  task_status: number;
  state: DeliveryView['state'];
  attempt_count: number;
  next_attempt_at: Date | null;
  created_at: Date;
  completed_at: Date | null;
  attempts: Array<Omit<AttemptView, 'started_at'> & { started_at: string }>;
}

const SELECT_DELIVERIES = `
SELECT d.id, t.public_id, d.url, d.task_status, d.state::text AS state, d.attempt_count,
       d.next_attempt_at, d.created_at, d.completed_at,
       COALESCE((SELECT json_agg(json_build_object(
                   'attempt_number', a.attempt_number, 'started_at', a.started_at, 'duration_ms', a.duration_ms,
                   'status_code', a.status_code, 'error', a.error, 'response_excerpt', a.response_excerpt)
                   ORDER BY a.attempt_number)
                   FROM webhook_attempts a WHERE a.delivery_id = d.id), '[]'::json) AS attempts
  FROM webhook_deliveries d
  JOIN tasks t ON t.id = d.task_id`;

const iso = (d: Date | null) => (d ? d.toISOString() : null);

function toView(row: DeliveryRow): DeliveryView {
  return {
    id: row.id,
    public_id: row.public_id,
    url: row.url,
    task_status: row.task_status,
    state: row.state,
    attempt_count: row.attempt_count,
    next_attempt_at: row.state === 'pending' ? iso(row.next_attempt_at) : null,
    created_at: row.created_at.toISOString(),
    completed_at: iso(row.completed_at),
    attempts: row.attempts.map((a) => ({ ...a, started_at: new Date(a.started_at).toISOString() })),
  };
}

/** The account's deliveries, newest first, each with every attempt; optionally those of one task. */
export async function listDeliveries(pool: pg.Pool, accountId: string, opts: { publicId?: string; limit: number }): Promise<DeliveryView[]> {
  const { rows } = await pool.query<DeliveryRow>({
    name: 'list-webhook-deliveries',
    text: `${SELECT_DELIVERIES}
            WHERE d.account_id = $1 AND ($2::text IS NULL OR t.public_id = $2)
            ORDER BY d.created_at DESC, d.id DESC LIMIT $3`,
    values: [accountId, opts.publicId ?? null, opts.limit],
  });
  return rows.map(toView);
}

/**
 * Sends a finished delivery (succeeded or given up) once more, now: one more attempt in the same
 * series, so `webhook-id` stays the same and receivers can de-duplicate. If that attempt fails and
 * the schedule still has retries after it, they follow. A pending delivery is refused (409).
 */
export async function resendDelivery(
  deps: { pool: pg.Pool; webhooks: WebhookQueue; logger: Logger },
  accountId: string,
  deliveryId: string,
): Promise<DeliveryView> {
  const { rows } = await deps.pool.query<{ attempt_count: number; state: string }>({
    name: 'resend-webhook-delivery',
    text: `WITH target AS (
             SELECT id, state FROM webhook_deliveries WHERE id = $1 AND account_id = $2
           ), upd AS (
             UPDATE webhook_deliveries d
                SET state = 'pending', next_attempt_at = now(), completed_at = NULL
               FROM target
              WHERE d.id = target.id AND target.state <> 'pending'
             RETURNING d.attempt_count
           )
           SELECT target.state::text AS state, (SELECT attempt_count FROM upd) AS attempt_count FROM target`,
    values: [deliveryId, accountId],
  });
  const row = rows[0];
  if (!row) throw new ApiError('DELIVERY_NOT_FOUND');
  if (row.attempt_count === null) throw new ApiError('DELIVERY_PENDING');
  try {
    await deps.webhooks.enqueueAttempt(deliveryId, row.attempt_count + 1, 0);
  } catch (err) {
    // The row says pending and due now: the dispatcher's sweeper sends it.
    deps.logger.warn('resend not enqueued; the sweeper will send it', { delivery_id: deliveryId, error: (err as Error).message });
  }
  const view = await getDelivery(deps.pool, accountId, deliveryId);
  if (!view) throw new ApiError('DELIVERY_NOT_FOUND');
  return view;
}

async function getDelivery(pool: pg.Pool, accountId: string, deliveryId: string): Promise<DeliveryView | undefined> {
  const { rows } = await pool.query<DeliveryRow>({
    name: 'get-webhook-delivery',
    text: `${SELECT_DELIVERIES} WHERE d.account_id = $1 AND d.id = $2`,
    values: [accountId, deliveryId],
  });
  return rows[0] && toView(rows[0]);
}
