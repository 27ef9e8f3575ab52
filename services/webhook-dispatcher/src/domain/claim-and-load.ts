import type { SqlExecutor } from '@taskapi/db';
import { claimAttemptAndLoad, type ClaimAndLoad, type ClaimedDelivery } from '../repositories/deliveries';

export type { ClaimedDelivery } from '../repositories/deliveries';

/**
 * Claims attempt `attempt` and loads the delivery in one round trip, when the caller knows the
 * account and holds the plaintext of `ciphertext` (its cache of decrypted secrets). The claim is
 * `claimAttempt`'s, made only while the account's secret is still `ciphertext`: a secret that
 * cannot be decrypted never takes a number here either.
 * @returns null when nothing was claimed: not this number's turn, the delivery is done, the last
 *   attempt is in flight, or the secret was rotated since; the caller then takes the full path
 *   (load, decrypt, claim), which tells these apart.
 */
export function claimAndLoad(db: SqlExecutor, c: ClaimAndLoad): Promise<ClaimedDelivery | null> {
  return claimAttemptAndLoad(db, c);
}
