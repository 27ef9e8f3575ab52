import type { Queryable } from '@taskapi/domain';

/** A delivery with what its webhook needs: the task's outcome and the account's encrypted secret. */
export interface DeliveryToSend {
  id: string;
  state: 'pending' | 'succeeded' | 'failed';
  /** Attempt numbers claimed so far (the last one may still be in flight). */
  attempt_count: number;
  /** Whether attempt `attempt_count` was claimed and its result is not recorded yet. */
  last_attempt_in_flight: boolean;
  /** With `last_attempt_in_flight`: milliseconds since that claim, by the database's clock. */
  last_attempt_claimed_ms_ago: number | null;
  url: string;
  task_status: number;
  public_id: string;
  kind: string;
  error_code: string | null;
  /** Source text of the stored JSON (`json` columns keep it exactly). */
  payload: string | null;
  result: string | null;
  account_id: string;
  webhook_secret_ciphertext: string;
}

export async function loadDelivery(db: Queryable, deliveryId: string): Promise<DeliveryToSend | null> {
  const { rows } = await db.query<DeliveryToSend>({
    name: 'dispatcher-load-delivery',
    text: `SELECT d.id, d.state::text AS state, d.attempt_count,
                  COALESCE((SELECT w.in_flight FROM webhook_attempts w
                             WHERE w.delivery_id = d.id AND w.attempt_number = d.attempt_count), false) AS last_attempt_in_flight,
                  (SELECT (extract(epoch FROM now() - w.started_at) * 1000)::float8 FROM webhook_attempts w
                    WHERE w.delivery_id = d.id AND w.attempt_number = d.attempt_count AND w.in_flight) AS last_attempt_claimed_ms_ago,
                  d.url, d.task_status,
                  t.public_id, t.kind::text AS kind, t.error_code, t.payload::text AS payload, t.result::text AS result,
                  a.id AS account_id, a.webhook_secret_ciphertext
             FROM webhook_deliveries d
             JOIN tasks t ON t.id = d.task_id
             JOIN accounts a ON a.id = d.account_id
            WHERE d.id = $1`,
    values: [deliveryId],
  });
  return rows[0] ?? null;
}
