import type { Task } from './generated';

/**
 * An error answer of the Task API (any non-2xx status), after the retries the client makes.
 * `message` is the API's own `message`, verbatim (e.g. `Insufficient credits.`); `body` is the
 * parsed JSON body (with fields such as `errors`, `required`/`available`, `retry_after`), or the
 * text when the answer was not JSON (a proxy's 502 page).
 */
export class TaskApiError extends Error {
  override readonly name: string = 'TaskApiError';
  /** The HTTP status; 0 when no answer arrived (see `TaskApiConnectionError`). */
  readonly status: number;
  readonly body: unknown;
  /** The API's `X-Request-Id` of the failed request: quote it when asking for support. */
  readonly requestId: string | null;

  constructor(status: number, message: string, body: unknown, requestId: string | null, options?: { cause?: unknown }) {
    super(message, options);
    this.status = status;
    this.body = body;
    this.requestId = requestId;
  }
}

/** No answer: the connection failed or was reset (after the retries idempotent calls get). */
export class TaskApiConnectionError extends TaskApiError {
  override readonly name: string = 'TaskApiConnectionError';

  constructor(message: string, cause?: unknown) {
    super(0, message, null, null, { cause });
  }
}

/** No answer (or not all of its body) within the client's `timeoutMs`, or the call's own. */
export class TaskApiTimeoutError extends TaskApiConnectionError {
  override readonly name: string = 'TaskApiTimeoutError';

  /** @param afterHeaders the status and headers had arrived; the body was cut short */
  constructor(
    message: string,
    cause?: unknown,
    readonly afterHeaders = false,
  ) {
    super(message, cause);
  }
}

/**
 * `tasks.wait()` ran out of its `timeoutMs` before the task reached a terminal status. `task` is
 * the last state seen (undefined when none was read).
 */
export class TaskWaitTimeoutError extends Error {
  override readonly name: string = 'TaskWaitTimeoutError';

  constructor(
    readonly taskId: string,
    readonly timeoutMs: number,
    readonly task: Task | undefined,
  ) {
    super(`Task ${taskId} did not finish within ${timeoutMs} ms.`);
  }
}

/** `verifyWebhook` refused a request: missing or wrong signature, stale timestamp, or a body that is not JSON. */
export class WebhookVerificationError extends Error {
  override readonly name: string = 'WebhookVerificationError';
}
