import type { DeliveryToSend } from '../repositories/deliveries';

/** What a run of attempt `attempt`'s job does with its delivery as loaded (see `attemptTurn`). */
export type AttemptTurn =
  /** Nothing: the delivery is unknown or done, the attempt was made, or the previous one is in flight. */
  | { action: 'skip' }
  /** Claim the number and send it: the next number, after a recorded attempt. */
  | { action: 'send' }
  /** Look again in `inMs`: the number is claimed by a run that may still be sending or recording it. */
  | { action: 'wait'; inMs: number }
  /** Record the claimed number with an unknown result: the run that claimed it did not live to record it. */
  | { action: 'record-unknown' };

/**
 * The in-flight rules: a number is sent once, after the previous one is recorded, and a claimed
 * number whose run died is recorded (result unknown) rather than sent again.
 * @param liveClaimMs how long a claim may stay unrecorded while its run may still be alive.
 * @param canWait whether this run can postpone its job (it holds the job's lock).
 */
export function attemptTurn(
  delivery: Pick<DeliveryToSend, 'state' | 'attempt_count' | 'last_attempt_in_flight' | 'last_attempt_claimed_ms_ago'> | null,
  attempt: number,
  opts: { liveClaimMs: number; canWait: boolean },
): AttemptTurn {
  if (!delivery || delivery.state !== 'pending') return { action: 'skip' };
  if (delivery.attempt_count === attempt && delivery.last_attempt_in_flight) {
    const age = delivery.last_attempt_claimed_ms_ago ?? Infinity;
    // A second run of this job (a stalled-job recovery, a sweeper re-add) while the first may
    // still be sending or recording: look again once the first would have finished.
    if (age < opts.liveClaimMs && opts.canWait) return { action: 'wait', inMs: opts.liveClaimMs - age };
    // The POST may have reached the receiver, so the number stays taken and the schedule goes on.
    return { action: 'record-unknown' };
  }
  if (delivery.attempt_count !== attempt - 1 || delivery.last_attempt_in_flight) return { action: 'skip' };
  return { action: 'send' };
}
