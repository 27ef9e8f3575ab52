// Webhooks as coglet sends them (crates/coglet/src/webhook.rs): the prediction JSON POSTed to the
// request's `webhook` URL, filtered by `webhook_events_filter`; `start` and `logs` at most once per
// throttle interval (a throttled update is dropped: the next one carries the whole state), `output`
// never throttled, `completed` retried with exponential backoff.

/** The `webhook_events_filter` values. */
export const WEBHOOK_EVENTS = ['start', 'output', 'logs', 'completed'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** The version we answer as, in `User-Agent: coglet/<version>` and `/health-check` (replicate/cog 0.22.0). */
export const COGLET_VERSION = '0.22.0';

/** Statuses after which a terminal webhook is sent again (coglet's `retry_status_codes`). */
const RETRY_STATUSES = new Set([429, 500, 502, 503, 504]);

export interface WebhookSettings {
  /** Minimum time between `start`/`logs` webhooks (coglet: `COG_THROTTLE_RESPONSE_INTERVAL`, 500 ms). */
  throttleMs: number;
  /** Retries of the terminal webhook after the first attempt (coglet: 12). */
  maxRetries: number;
  /** Retry n waits `backoffBaseMs * 2^min(n, 10)` (coglet: 100 ms, so the first retry comes after 200 ms). */
  backoffBaseMs: number;
  /** Sent as `Authorization: Bearer <token>` (coglet: `WEBHOOK_AUTH_TOKEN`). */
  authToken?: string;
}

/** The W3C trace headers of the request that created the prediction, sent back on each webhook. */
export interface TraceContext {
  traceparent?: string;
  tracestate?: string;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** One prediction's webhook sender. */
export class WebhookSender {
  // coglet starts 10 s in the past so that the first update goes out at once.
  private lastSent = performance.now() - 10_000;
  // coglet sends each webhook from its own task, so a receiver may see them out of order. Ours go
  // out one after another, so that tests can rely on their order; a slow receiver delays the later ones.
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly url: string,
    private readonly events: ReadonlySet<WebhookEvent>,
    private readonly trace: TraceContext,
    private readonly settings: WebhookSettings,
    /** Aborts pending sends and retries when the server closes (a killed container sends nothing more). */
    private readonly stop: AbortSignal,
    /** Told of each webhook the filter and the throttle let through, as it is queued. */
    private readonly accepted: (event: WebhookEvent) => void = () => undefined,
  ) {}

  /** A non-terminal update: sent once, not retried; dropped when filtered out or throttled. */
  send(event: Exclude<WebhookEvent, 'completed'>, payload: unknown): void {
    if (!this.events.has(event)) return;
    const now = performance.now();
    if (event !== 'output' && now - this.lastSent < this.settings.throttleMs) return;
    this.lastSent = now;
    this.accepted(event);
    const body = JSON.stringify(payload);
    this.enqueue(async () => {
      await this.post(body).catch(() => undefined); // fire and forget, as coglet's non-terminal sends
    });
  }

  /** The terminal update: retried on 429/5xx and connection errors, up to `maxRetries` times. */
  sendTerminal(payload: unknown): void {
    if (!this.events.has('completed')) return;
    this.accepted('completed');
    const body = JSON.stringify(payload);
    this.enqueue(async () => {
      for (let attempt = 0; ; ) {
        let retryable: boolean;
        try {
          const status = await this.post(body);
          if (status >= 200 && status < 300) return;
          retryable = RETRY_STATUSES.has(status);
        } catch {
          retryable = !this.stop.aborted; // a connection error is retried; a closed server gives up
        }
        if (!retryable || ++attempt > this.settings.maxRetries) return;
        await sleep(this.settings.backoffBaseMs * 2 ** Math.min(attempt, 10), this.stop);
      }
    });
  }

  /** Resolves once every webhook queued so far has been sent or given up on. */
  idle(): Promise<void> {
    return this.queue;
  }

  private enqueue(task: () => Promise<void>): void {
    this.queue = this.queue.then(task).catch(() => undefined); // a send that failed ends there
  }

  private async post(body: string): Promise<number> {
    const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': `coglet/${COGLET_VERSION}` };
    if (this.settings.authToken) headers.authorization = `Bearer ${this.settings.authToken}`;
    if (this.trace.traceparent) headers.traceparent = this.trace.traceparent;
    if (this.trace.tracestate) headers.tracestate = this.trace.tracestate;
    const res = await fetch(this.url, {
      method: 'POST',
      headers,
      body,
      signal: AbortSignal.any([this.stop, AbortSignal.timeout(30_000)]),
    });
    await res.arrayBuffer(); // read to the end so the connection can be reused
    return res.status;
  }
}
