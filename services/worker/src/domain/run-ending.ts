import { TASK_MAX_ATTEMPTS } from '@taskapi/queue';
import { EngineBusyError, EngineInterruptedError } from '@taskapi/engines';
import type { TaskErrorCode } from '@taskapi/domain';
import type { HandBackReason } from '@taskapi/task-lifecycle';
import { isPlatformFault } from '@taskapi/service';
import { failureMessage } from './failure-message';
import { decideFailure } from './task-failure';

/** How a run ends: the one transition of the task's lifecycle it makes. */
export type RunEnding =
  | { kind: 'complete' }
  | { kind: 'cancelled' }
  | { kind: 'hand-back'; why: HandBackReason; delayMs: number }
  | { kind: 'retry'; delayMs: number; code: TaskErrorCode }
  | { kind: 'fail'; code: TaskErrorCode; message: string };

/** What a run knows when its engine has finished or thrown. */
export interface RunState {
  /** Why the run stopped, when the engine threw (or the run was aborted after it returned). */
  error: unknown;
  /** A cancel of the task reached this run. */
  cancelled: boolean;
  /** The worker is stopping. */
  shuttingDown: boolean;
  /** The kind's deadline passed. */
  timedOut: boolean;
  /** This run's attempt (1 for the first). */
  attempt: number;
  /** Wait before the first retry (`TASK_RETRY_BACKOFF_MS`), doubled for each further one. */
  retryBackoffMs: number;
  /** The kind's deadline, for the `timeout` message. */
  timeoutMs: number;
}

/**
 * The ending of a run that did not complete. A task fails only for reasons of its own: a cancel
 * ends the run; a busy model server, a worker stopping and the platform's own faults (PostgreSQL
 * or Redis unreachable, switching, read-only) hand it back without spending an attempt; an engine's
 * transient failure spends one and is retried while attempts remain; anything else fails the task.
 */
export function decideEnding(s: RunState): RunEnding {
  if (s.cancelled && !s.shuttingDown) return { kind: 'cancelled' };
  if (s.error instanceof EngineBusyError && !s.shuttingDown && !s.timedOut && !s.cancelled) {
    return { kind: 'hand-back', why: s.error.counted ? 'busy' : 'model-mismatch', delayMs: s.error.retryInMs };
  }
  if (s.shuttingDown && !s.timedOut) return { kind: 'hand-back', why: 'shutdown', delayMs: 0 };
  if ((isPlatformFault(s.error) || s.error instanceof EngineInterruptedError) && !s.timedOut) return { kind: 'hand-back', why: 'platform-fault', delayMs: 0 };
  const decision = decideFailure(s.error, s.timedOut);
  if (decision.kind === 'retry' && s.attempt < TASK_MAX_ATTEMPTS) return { kind: 'retry', delayMs: s.retryBackoffMs * 2 ** Math.max(0, s.attempt - 1), code: decision.code };
  return { kind: 'fail', code: decision.code, message: failureMessage(s.error, decision.code, s.timeoutMs) };
}
