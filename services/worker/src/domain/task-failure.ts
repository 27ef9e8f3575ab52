import type { TaskErrorCode } from '@taskapi/domain';
import { EngineError, ImageFetchError, TaskInputError } from '@taskapi/engines';

/** What to do with an error thrown while running a task. */
export type FailureDecision =
  | { kind: 'fail'; code: TaskErrorCode }
  /** Transient: let BullMQ retry; on the last attempt fail with `code`. */
  | { kind: 'retry'; code: TaskErrorCode };

/**
 * Permanent failures end the task at once (no point running it again); anything else is retried
 * while attempts remain.
 */
export function decideFailure(err: unknown, timedOut: boolean): FailureDecision {
  if (timedOut) return { kind: 'fail', code: 'timeout' };
  if (err instanceof TaskInputError) return { kind: 'fail', code: 'invalid_input' };
  if (err instanceof ImageFetchError) return { kind: 'fail', code: 'image_fetch_failed' };
  if (err instanceof EngineError) return err.retryable ? { kind: 'retry', code: 'engine_error' } : { kind: 'fail', code: 'engine_error' };
  return { kind: 'retry', code: 'internal_error' };
}
