import type { Queryable } from '@taskapi/domain';
import { CLAIM_CONDITIONS, insertClaimedAttempt } from './claim-attempt';
import type { DeliveryToSend } from './load-delivery';

/** What the fast path needs to send: the delivery's task outcome (the secret is already known). */
export type ClaimedDelivery = Pick<DeliveryToSend, 'id' | 'url' | 'task_status' | 'public_id' | 'kind' | 'error_code' | 'payload' | 'result'>;

// One statement instead of load + claim: the claim of `claim-attempt.ts` (its conditions), made
// only while the account's secret is still the ciphertext the caller already decrypted — so a
// secret that cannot be decrypted never takes a number here either. It returns what the body needs.
const CLAIM_AND_LOAD_SQL = `
WITH d AS (
  UPDATE webhook_deliveries d
     SET attempt_count = $2
    FROM accounts a
   WHERE ${CLAIM_CONDITIONS}
     AND a.id = d.account_id AND a.id = $3 AND a.webhook_secret_ciphertext = $4
  RETURNING d.id, d.url, d.task_status, d.task_id
), w AS (
  ${insertClaimedAttempt('$5')}
  RETURNING delivery_id
)
SELECT d.id, d.url, d.task_status,
       t.public_id, t.kind::text AS kind, t.error_code, t.payload::text AS payload, t.result::text AS result
  FROM d JOIN w ON w.delivery_id = d.id JOIN tasks t ON t.id = d.task_id`;

/**
 * Claims attempt `attempt` and loads the delivery in one round trip, when the caller knows the
 * account and holds the plaintext of `ciphertext` (its cache of decrypted secrets).
 * @returns null when nothing was claimed: not this number's turn, the delivery is done, the last
 *   attempt is in flight, or the secret was rotated since; the caller then takes the full path
 *   (load, decrypt, claim), which tells these apart.
 */
export async function claimAndLoad(
  db: Queryable,
  c: { deliveryId: string; attempt: number; accountId: string; ciphertext: string; startedAt: Date },
): Promise<ClaimedDelivery | null> {
  const { rows } = await db.query<ClaimedDelivery>({
    name: 'dispatcher-claim-and-load',
    text: CLAIM_AND_LOAD_SQL,
    values: [c.deliveryId, c.attempt, c.accountId, c.ciphertext, c.startedAt],
  });
  return rows[0] ?? null;
}
