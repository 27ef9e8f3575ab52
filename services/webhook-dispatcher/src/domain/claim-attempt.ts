import type { SqlExecutor } from '@taskapi/db';
import { claimAttemptNumber } from '../repositories/deliveries';

/**
 * Claims attempt number `attempt` of a delivery before its webhook is sent: once this commits, the
 * number belongs to one POST and is never sent again, whatever happens to the dispatcher.
 * A number is claimable only as the next number of a pending delivery whose previous attempt is
 * recorded: of two dispatchers racing for it one gets it, and no attempt starts while the one
 * before it is in flight.
 * @returns false when the number is not this caller's to send (taken, or the delivery is done).
 */
export function claimAttempt(db: SqlExecutor, deliveryId: string, attempt: number, startedAt: Date): Promise<boolean> {
  return claimAttemptNumber(db, deliveryId, attempt, startedAt);
}
