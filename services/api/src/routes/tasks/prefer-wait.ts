import { z } from 'zod';
import type { Response } from 'express';
import { preferredWaitSeconds } from '../../domain/prefer-wait';
import { waitForTask, type WaitDeps, type WaitOutcome } from '../../domain/wait-for-task';

/** The `Prefer` request header of the task read and create operations (any value is accepted: RFC 7240). */
export const preferHeader = {
  schema: z.string().optional().meta({ example: 'wait=30' }),
  description:
    'Long-poll: `wait=N` (1 to 60 seconds; larger values are treated as 60) answers as soon as the task is terminal ' +
    '(20, 30, 40), or after N seconds with its current state, with `Preference-Applied: wait=N`. Woken by the task\'s ' +
    'terminal event, so waiting costs no polling. Other or malformed preferences are ignored (RFC 7240), never an error. ' +
    'The request counts once against the rate limits however long it waits.',
} as const;

/**
 * Applies `Prefer: wait` for a task the handler is about to answer with; undefined when not asked.
 * `Preference-Applied` is in `headers` only when the wait was honoured.
 */
export async function applyPreferWait(
  deps: WaitDeps,
  prefer: string | undefined,
  accountId: string,
  publicId: string,
  res: Response,
): Promise<(WaitOutcome & { headers: Record<string, string> }) | undefined> {
  const seconds = preferredWaitSeconds(prefer);
  if (seconds === undefined) return undefined;
  // Gone before the wait began (during a create's database work): 'close' has fired already.
  if (res.closed || res.destroyed) return { task: null, applied: false, gone: true, headers: {} };
  const outcome = await waitForTask(deps, accountId, publicId, seconds, (cb) => res.once('close', cb));
  return { ...outcome, headers: outcome.applied ? { 'Preference-Applied': `wait=${seconds}` } : {} };
}
