import { INTERNAL_ERROR_MESSAGE, storableText, type TaskErrorCode } from '@taskapi/domain';
import { EngineError, ImageFetchError, TaskInputError } from '@taskapi/engines';

export { INTERNAL_ERROR_MESSAGE };

const MAX_MESSAGE_CHARS = 300;

// Text that must never reach a customer's task JSON, even from an engine we trust: URLs (may carry
// credentials or signed queries), words that announce a credential, long opaque strings (keys,
// tokens, hashes), key prefixes, stack frames, and internals: host names, addresses, ports,
// `user:password@host` and file paths.
const UNSAFE = [
  /[a-z][a-z0-9+.-]*:\/\//i,
  /\b(bearer|basic|token|secret|password|passwd|api[_-]?key|authorization|credential)s?\b/i,
  /[A-Za-z0-9_\-+/=.]{24,}/,
  /\bsk-(live|test)-/i,
  /\bat\s+\S+\s+\(?\S*:\d+:\d+\)?/,
  /\b\w*Error:\s/,
  // gpu-7.corp.internal, api.example.com (a label with a letter, a dot, a label of 2+ starting with a letter)
  /\b[a-z0-9-]*[a-z][a-z0-9-]*\.[a-z][a-z0-9-]*[a-z0-9]\b/i,
  /\b\d{1,3}(\.\d{1,3}){3}\b/,
  /\b[0-9a-f]{0,4}:[0-9a-f]{0,4}:[0-9a-f]{0,4}\b/i,
  /\w:\d{2,5}\b/,
  /\S@\S/,
  /(^|[\s(="'])(~?\/[\w.-]+){2,}|\b[a-z]:\\/i,
];

/** `text` on one line: no control characters, no lone surrogates, whitespace collapsed; not cut. */
function oneLine(text: string): string {
  return storableText(
    // eslint-disable-next-line no-control-regex -- matching control characters is the point here
    text.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' '),
  )
    .replace(/\s+/g, ' ')
    .trim();
}

/** At most 300 characters, cut on a code point boundary and marked. */
function capped(line: string): string {
  if (line.length <= MAX_MESSAGE_CHARS) return line;
  return `${Array.from(line.slice(0, MAX_MESSAGE_CHARS - 1)).join('').replace(/[\uD800-\uDBFF]$/, '')}…`;
}

/**
 * `text` as one storable line: no control characters (so no NUL, which PostgreSQL text refuses),
 * no lone surrogates, whitespace collapsed, at most 300 characters.
 */
export function storableLine(text: string): string {
  return capped(oneLine(text));
}

/**
 * A message from outside our code (an engine's answer, a decoder) as a sentence for the task's
 * owner, or null when it is empty or looks like it could carry a secret or internals.
 */
export function safeSentence(text: string | undefined): string | null {
  if (text === undefined) return null;
  // Judged whole, before the cut: a cut could shorten a secret below what the checks recognise.
  const whole = oneLine(text);
  if (!whole || UNSAFE.some((re) => re.test(whole))) return null;
  const line = capped(whole);
  const sentence = line[0]!.toUpperCase() + line.slice(1);
  return /[.!?…]$/.test(sentence) ? sentence : `${sentence}.`;
}

/**
 * The `error_message` stored beside `error_code` when the worker fails a task: what went wrong in
 * words the task's owner can act on. Built from what the worker knows, never from a stack.
 *
 * @param timeoutMs the kind's deadline, for `timeout`.
 */
export function failureMessage(err: unknown, code: TaskErrorCode, timeoutMs: number): string {
  switch (code) {
    case 'timeout':
      return `The task did not finish within ${Math.round(timeoutMs / 100) / 10} s.`;
    case 'image_fetch_failed':
      return err instanceof ImageFetchError
        ? storableLine(`The image at image_url could not be fetched: ${err.reason}.`)
        : 'The image at image_url could not be fetched.';
    case 'invalid_input':
      return (err instanceof TaskInputError && safeSentence(err.message)) || 'The input could not be processed; check the task parameters.';
    case 'engine_error':
      return (err instanceof EngineError && err.publicMessage && storableLine(err.publicMessage)) || 'The engine failed to process the task.';
    case 'internal_error':
      return INTERNAL_ERROR_MESSAGE;
    case 'model_unavailable':
      // Written by the busy transition with the time waited (modelUnavailableMessage); this is
      // only what a failure of that code says without it.
      return 'No model server could take the task. It was not run and was refunded; please try again later.';
  }
}

/**
 * The `error_message` of a task that waited `waitedMs` in all on busy or unavailable model servers
 * (`model_unavailable`): ours, not the task's, so it says to try again.
 */
export function modelUnavailableMessage(waitedMs: number): string {
  const minutes = waitedMs / 60_000;
  const waited = minutes >= 1 ? `${Math.round(minutes)} min` : `${Math.max(1, Math.round(waitedMs / 1000))} s`;
  return `No model server could take the task: they stayed busy or unavailable for ${waited} in all. It was not run and was refunded; please try again later.`;
}
