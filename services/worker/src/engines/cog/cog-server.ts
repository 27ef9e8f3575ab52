// One Cog model server, as a worker talks to it (the Cog HTTP API, `docs/http.md` of the
// replicate/cog repository; docs/models.md): predictions created idempotently with
// `PUT /predictions/{id}`, streamed (`Accept: text/event-stream`) or answered by webhooks
// (`Prefer: respond-async`), cancelled with `POST /predictions/{id}/cancel`, and the server's
// `GET /health-check`. It also learns how many predictions the server runs at once, so the worker
// does not send it more than that (see `capacity`).
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { Pool, type Dispatcher } from 'undici';
import { EngineBusyError, EngineError, TaskInputError } from '@taskapi/engines';
import type { Logger } from '@taskapi/logger';
import { ReadinessProblem } from '@taskapi/service';
import { checkInputs, type SentInput } from './input-check';
import { handCarriedHeaders } from '@taskapi/telemetry';

/** A prediction request (`PUT /predictions/{id}` body). */
export interface CogPredictionRequest {
  id: string;
  input: Record<string, unknown>;
  webhook: string;
  webhook_events_filter: readonly string[];
}

/** One server-sent event of a prediction stream. */
export interface CogStreamEvent {
  event: string;
  data: string;
}

/** What `stream` got: the prediction's events, or the server does not stream this model (`406`). */
export type CogStream = { kind: 'events'; events: AsyncIterable<CogStreamEvent> } | { kind: 'not-streaming' };

/** Health statuses in which the server takes predictions (BUSY: all slots in use, it will again). */
const SERVING = new Set(['READY', 'BUSY']);
/**
 * Statuses of a server that answers but cannot take the prediction now: its tasks wait (busy time,
 * docs/models.md "A model server that stays busy") instead of spending attempts, since only the
 * model's operator can end them (a container restarted, a GPU node ready at last).
 */
const WAIT_ON = new Set(['STARTING', 'BUSY', 'READY', 'SETUP_FAILED', 'DEFUNCT', 'UNHEALTHY', 'UNKNOWN']);
/** How much of a model's own reason (its setup's last log line, its healthcheck's error) is quoted. */
const REASON_MAX = 300;

/** Header wait for a create or a cancel; a stream's body may then stay quiet as long as the model works. */
const REQUEST_TIMEOUT_MS = 30_000;
const CANCEL_TIMEOUT_MS = 1_000;
const HEALTH_TIMEOUT_MS = 2_000;

/** After this long without a 409, the learned capacity grows by one (up to the worker's own). */
const CAPACITY_PROBE_MS = 30_000;

/** A new prediction asks the health check again after this long, to notice a restarted server (and re-check its inputs). */
const INPUT_RECHECK_MS = 30_000;
/** `GET /openapi.json`: its wait, and the most of it read (Cog's documents are a few KiB). */
const SCHEMA_TIMEOUT_MS = 2_000;
const SCHEMA_MAX_BYTES = 1024 * 1024;
/** The most of a `/health-check` answer read (it carries the setup's whole log). */
const HEALTH_MAX_BYTES = 256 * 1024;

export interface CogServerOptions {
  /** The server's base URL (`COG_URL_<KIND>`), no trailing slash. */
  url: string;
  /** The most predictions this worker runs there at once: COG_MAX_CONCURRENCY_<KIND>, at most its WORKER_CONCURRENCY. */
  maxConcurrency: number;
  /** Offer a refused task again after this long (`COG_BUSY_RETRY_MS`). */
  busyRetryMs: number;
  /** Told whenever `capacity` changes. */
  onCapacity?: (capacity: number) => void;
  /** What the worker sends the model, checked against the model's schema before the first prediction (none: not checked). */
  inputs?: { sent: readonly SentInput[]; mapVariable: string };
  /** Where the schema check says what it found (once per check). */
  logger?: Pick<Logger, 'info' | 'warn'>;
}

export class CogServer {
  readonly url: string;
  /** The server's host and port, whose output URLs the worker may fetch although they are private. */
  readonly origin: string;
  private readonly pool: Pool;
  private inFlight = 0;
  private learned: number;
  private lastRefusedAt = -Infinity;
  /** Whether the server streams this model: unknown until a stream was asked for. */
  private streaming: boolean | undefined;
  /** The last health status seen (a 409 counts as BUSY). */
  private lastHealth: string | undefined;
  /** The model's own words with the last status that was not serving (setup log line, healthcheck error). */
  private lastReason: string | undefined;
  /** The running setup's start (`setup.started_at`): a new one is a restarted server. */
  private setupStartedAt: string | undefined;
  /**
   * The last input check: for which setup, when, and what it found (undefined: fine); `done` false
   * when the server was not serving then (asked again a second later, not 30 s).
   */
  private inputCheck: { setup: string | undefined; at: number; problem: string | undefined; done: boolean } | undefined;
  private inputChecking: Promise<string | undefined> | undefined;
  /** The schema's last fetch failed (its warning said once until one succeeds). */
  private schemaFailing = false;

  constructor(private readonly opts: CogServerOptions) {
    this.url = opts.url;
    this.origin = new URL(opts.url).origin;
    this.learned = opts.maxConcurrency;
    this.pool = new Pool(this.origin, { connections: opts.maxConcurrency * 2 + 2, pipelining: 1 });
  }

  /**
   * How many predictions this worker runs there at once: `maxConcurrency` until the server refuses
   * one (409), then as many as were running when it did (at least one), growing by one after each
   * CAPACITY_PROBE_MS without a refusal, back up to `maxConcurrency`. Other workers may share the server, so
   * this is a ceiling, not a promise: a refusal is still handled as busy.
   */
  get capacity(): number {
    if (this.learned < this.opts.maxConcurrency && Date.now() - this.lastRefusedAt >= CAPACITY_PROBE_MS) {
      this.learned += 1;
      this.lastRefusedAt = Date.now();
      this.opts.onCapacity?.(this.learned);
    }
    return this.learned;
  }

  /** Whether to ask for a stream (not once the server answered 406). */
  get tryStream(): boolean {
    return this.streaming !== false;
  }

  /** Whether the server streams this model: undefined until a stream was asked for. */
  get streams(): boolean | undefined {
    return this.streaming;
  }

  /** A prediction of this worker's started running there (call `ended` once it is over). */
  started(): void {
    this.inFlight++;
  }

  ended(): void {
    this.inFlight = Math.max(0, this.inFlight - 1);
  }

  /**
   * `PUT /predictions/{id}` with `Accept: text/event-stream`: the events of the running prediction
   * of that id, replayed from its start, then live. (Cog creates the prediction when none of that id
   * runs, and cancels one it created so once its last stream closes: see cog-engine.ts.)
   */
  async stream(req: CogPredictionRequest, signal: AbortSignal): Promise<CogStream> {
    const res = await this.put(req, { accept: 'text/event-stream' }, signal);
    if (res.statusCode === 406) {
      await res.body.dump();
      this.streaming = false;
      return { kind: 'not-streaming' };
    }
    await this.refuseUnlessOk(res, [200], false);
    this.streaming = true;
    return { kind: 'events', events: sseEvents(res.body) };
  }

  /** `PUT /predictions/{id}` with `Prefer: respond-async`: created (or already running), updates come by webhook. */
  async startAsync(req: CogPredictionRequest, signal: AbortSignal): Promise<void> {
    const res = await this.put(req, { prefer: 'respond-async' }, signal);
    await this.refuseUnlessOk(res, [200, 201, 202], true);
    await res.body.dump();
  }

  /** `POST /predictions/{id}/cancel`; a prediction the server does not know (404) is not an error. */
  async cancel(id: string): Promise<void> {
    const res = await this.pool.request({
      method: 'POST',
      path: `${this.path(`/predictions/${encodeURIComponent(id)}/cancel`)}`,
      headersTimeout: CANCEL_TIMEOUT_MS,
      bodyTimeout: CANCEL_TIMEOUT_MS,
      signal: AbortSignal.timeout(CANCEL_TIMEOUT_MS),
    });
    await res.body.dump();
    if (res.statusCode !== 200 && res.statusCode !== 404) throw new Error(`cancel answered ${res.statusCode}`);
  }

  /** The server's `GET /health-check` status (READY, BUSY, STARTING, SETUP_FAILED, DEFUNCT, UNHEALTHY). */
  async health(): Promise<string> {
    const res = await this.pool.request({
      method: 'GET',
      path: this.path('/health-check'),
      headersTimeout: HEALTH_TIMEOUT_MS,
      bodyTimeout: HEALTH_TIMEOUT_MS,
      signal: AbortSignal.timeout(HEALTH_TIMEOUT_MS),
    });
    // Cog's answer carries the whole setup log: read a bounded part of it. Past the bound, only the
    // status is taken (it comes first), with no reason to quote.
    const { text, truncated } = await readCapped(res.body, HEALTH_MAX_BYTES);
    const body = res.statusCode === 200 && !truncated ? (safeJson(text) as HealthBody | undefined) : undefined;
    const status = res.statusCode === 200 ? (truncated ? /^\{\s*"status"\s*:\s*"([A-Z_]{1,40})"/.exec(text)?.[1] : body?.status) : undefined;
    this.lastHealth = typeof status === 'string' ? oneLine(status).slice(0, 40) : `HTTP ${res.statusCode}`;
    this.lastReason = SERVING.has(this.lastHealth) ? undefined : healthReason(this.lastHealth, body);
    const started = body?.setup?.started_at;
    if (typeof started === 'string') this.setupStartedAt = started.slice(0, 64);
    return this.lastHealth;
  }

  /**
   * Why the model cannot take what the worker sends (docs/models.md, "The model's inputs, checked
   * first"), or undefined: its `GET /openapi.json` read when the server first serves and again once
   * it restarted (a new setup), the answer kept in between (a new prediction asks the health check
   * at most every 30 s to notice a restart). A document that is missing, not JSON, too large or not
   * Cog's declares nothing: the model is trusted. One that could not be fetched (a timeout, a reset)
   * is asked for again at the next prediction.
   */
  async inputProblem(): Promise<string | undefined> {
    if (!this.opts.inputs) return undefined;
    const last = this.inputCheck;
    if (last && Date.now() - last.at < (last.done ? INPUT_RECHECK_MS : 1_000) && last.setup === this.setupStartedAt) return last.problem;
    return (this.inputChecking ??= this.checkInputsNow().finally(() => (this.inputChecking = undefined)));
  }

  /** The last input check's finding, without asking the server (for readiness, which must answer fast). */
  private knownInputProblem(): string | undefined {
    const last = this.inputCheck;
    return last && last.setup === this.setupStartedAt ? last.problem : undefined;
  }

  private async checkInputsNow(): Promise<string | undefined> {
    const last = this.inputCheck;
    const status = await this.health().catch(() => 'unreachable');
    const sameSetup = last !== undefined && last.setup === this.setupStartedAt;
    // Not serving now (starting, a blip, unreachable): nothing new to read. What was found for this
    // setup still holds; the prediction is refused all the same.
    if (!SERVING.has(status)) {
      this.inputCheck = sameSetup ? { ...last, at: Date.now() } : { setup: this.setupStartedAt, at: Date.now(), problem: undefined, done: false };
      return this.inputCheck.problem;
    }
    if (sameSetup && last.done) {
      this.inputCheck = { ...last, at: Date.now() };
      return last.problem;
    }
    const setup = this.setupStartedAt;
    const fetched = await this.schemaDocument();
    if (fetched.kind === 'failed') {
      // Asked again a second later; a problem this setup already showed still holds meanwhile.
      this.inputCheck = { setup, at: Date.now(), problem: sameSetup ? last.problem : undefined, done: false };
      return this.inputCheck.problem;
    }
    const found = fetched.kind === 'document' ? checkInputs(fetched.document, this.opts.inputs!.sent, this.opts.inputs!.mapVariable) : null;
    const problem = found?.problems.length ? `model server ${this.origin} does not take what the worker sends: ${found.problems.join('; ')}` : undefined;
    if (problem) this.opts.logger?.warn('model server cannot take what the worker sends; its kind is not ready and its tasks wait', { model: this.origin, problem });
    if (found?.undeclared.length) this.opts.logger?.info('model server does not declare inputs the worker sends; Cog drops them', { model: this.origin, inputs: found.undeclared });
    this.inputCheck = { setup, at: Date.now(), problem, done: true };
    return problem;
  }

  /**
   * The server's OpenAPI document; `none` (logged) when it has none the worker can read (a 4xx, not
   * JSON, too large), `failed` when it could not be fetched this time (a timeout, a reset, a 5xx).
   */
  private async schemaDocument(): Promise<{ kind: 'document'; document: unknown } | { kind: 'none' } | { kind: 'failed' }> {
    // Said once while it keeps failing (it is asked again every second meanwhile).
    const failed = (error: string) => {
      if (!this.schemaFailing) this.opts.logger?.warn('model server schema could not be fetched; asked again at the next prediction', { model: this.origin, error: error.slice(0, 200) });
      this.schemaFailing = true;
      return { kind: 'failed' as const };
    };
    let why: string;
    try {
      const res = await this.pool.request({
        method: 'GET',
        path: this.path('/openapi.json'),
        headersTimeout: SCHEMA_TIMEOUT_MS,
        bodyTimeout: SCHEMA_TIMEOUT_MS,
        signal: AbortSignal.timeout(SCHEMA_TIMEOUT_MS),
      });
      if (res.statusCode >= 500) {
        await res.body.dump();
        return failed(`it answered ${res.statusCode}`);
      }
      if (res.statusCode !== 200) {
        await res.body.dump();
        why = `it answered ${res.statusCode}`;
      } else {
        const { text, truncated } = await readCapped(res.body, SCHEMA_MAX_BYTES);
        why = `it is larger than ${SCHEMA_MAX_BYTES} bytes`;
        if (!truncated) {
          try {
            const document = JSON.parse(text) as unknown;
            this.schemaFailing = false;
            return { kind: 'document', document };
          } catch (err) {
            why = (err as Error).message.slice(0, 200);
          }
        }
      }
    } catch (err) {
      // A timeout, a reset, a connection refused: this time only.
      return failed((err as Error).message);
    }
    this.schemaFailing = false;
    this.opts.logger?.warn('model server schema not readable; its inputs are not checked', { model: this.origin, error: why });
    return { kind: 'none' };
  }

  /**
   * Whether the server is busy now: only asked (one health check) once it was last seen BUSY or
   * refused a prediction with 409, so a server with free slots costs no extra request.
   */
  async busyNow(): Promise<boolean> {
    if (this.lastHealth !== 'BUSY') return false;
    try {
      return (await this.health()) === 'BUSY';
    } catch {
      // Unreachable: the PUT will say so.
      return false;
    }
  }

  /** The error that leaves a task queued with no attempt spent, offered again after COG_BUSY_RETRY_MS. */
  busy(why: string): EngineBusyError {
    return this.waitOn(`model server ${this.origin} is busy: ${why}`);
  }

  /** The same, for a server that cannot take the task for another reason (`why` says which); `counted`: as busy time. */
  waitOn(why: string, counted = true): EngineBusyError {
    return new EngineBusyError(why, this.opts.busyRetryMs, counted);
  }

  /**
   * Throws unless the server takes predictions (the worker's readiness): a `ReadinessProblem` that
   * `/readyz` shows, quoting the model's own reason where it gives one.
   */
  async checkServing(): Promise<void> {
    const status = await this.health();
    if (!SERVING.has(status)) throw new ReadinessProblem(`model server ${this.origin} is ${status}${this.lastReason ? `: ${this.lastReason}` : ''}`);
    // The input check is not waited for here (a probe has 2 s): it is started, and its finding
    // shows from the next probe on (a prediction waits for it).
    void this.inputProblem().catch(() => undefined);
    const problem = this.knownInputProblem();
    if (problem) throw new ReadinessProblem(problem);
  }

  close(): Promise<void> {
    return this.pool.close();
  }

  private path(p: string): string {
    return `${new URL(this.url).pathname.replace(/\/$/, '')}${p}`;
  }

  private async put(req: CogPredictionRequest, headers: Record<string, string>, signal: AbortSignal): Promise<Dispatcher.ResponseData> {
    try {
      return await this.pool.request({
        method: 'PUT',
        path: this.path(`/predictions/${encodeURIComponent(req.id)}`),
        // The task's trace, by hand without the SDK (with it, the undici instrumentation's span).
        headers: { 'content-type': 'application/json', ...handCarriedHeaders(), ...headers },
        body: JSON.stringify(req),
        headersTimeout: REQUEST_TIMEOUT_MS,
        // A stream stays open, quiet while the model works; the run's deadline bounds it.
        bodyTimeout: 0,
        signal,
      });
    } catch (err) {
      if (signal.aborted) throw signal.reason as Error;
      throw new EngineError(`model server ${this.origin} unreachable: ${(err as Error).message}`, true, 'The model server could not be reached. Please try again later.');
    }
  }

  /**
   * 409 (all slots busy) and a 503 from a server that answers its health check (starting, setup
   * failed, defunct, unhealthy) are busy, not failures: the task waits without spending attempts,
   * its busy time bounded by MODEL_BUSY_TIMEOUT_MS, so it ends (model_unavailable) instead of
   * waiting forever; a 503 whose health check does not answer is retried like an unreachable
   * server; 422 is input the model can never take; any other 4xx is a failure; 5xx is retried.
   * Only a create (`learn`) teaches the capacity: a 409 to a stream request says nothing new was refused.
   */
  private async refuseUnlessOk(res: Dispatcher.ResponseData, ok: readonly number[], learn: boolean): Promise<void> {
    if (ok.includes(res.statusCode)) return;
    const text = await res.body.text().catch(() => '');
    if (res.statusCode === 409) {
      if (learn) {
        this.learned = Math.max(1, Math.min(this.learned, this.inFlight));
        this.lastRefusedAt = Date.now();
        this.lastHealth = 'BUSY';
        this.opts.onCapacity?.(this.learned);
      }
      throw this.busy('it answered 409 (at capacity)');
    }
    if (res.statusCode === 503) {
      const health = await this.health().catch(() => 'unreachable');
      if (WAIT_ON.has(health)) throw this.busy(`it answered 503 (${health}${this.lastReason ? `: ${this.lastReason}` : ''})`);
      throw new EngineError(`model server ${this.origin} answered 503 and its health check says ${health}`, true, 'The model server is not available. Please try again later.');
    }
    if (res.statusCode === 422) throw new TaskInputError(validationMessage(text));
    // The body is the server's own words: logged, never the task's message.
    const failed = res.statusCode >= 500;
    throw new EngineError(
      `model server ${this.origin} answered ${res.statusCode}: ${text.slice(0, 200)}`,
      failed,
      failed ? `The model server failed (HTTP ${res.statusCode}). Please try again later.` : `The model server refused the task (HTTP ${res.statusCode}).`,
    );
  }
}

/** The first message of Cog's 422 body (`{"detail":[{"loc":[...],"msg":...}]}`), naming the field. */
function validationMessage(text: string): string {
  const detail = (safeJson(text) as { detail?: Array<{ loc?: unknown[]; msg?: unknown }> } | undefined)?.detail?.[0];
  if (!detail || typeof detail.msg !== 'string') return 'The model refused the input.';
  const field = Array.isArray(detail.loc) ? detail.loc.at(-1) : undefined;
  return typeof field === 'string' ? `${field}: ${detail.msg}` : detail.msg;
}

/** What `/health-check` answers (coglet's HealthCheckResponse), as far as the worker reads it. */
interface HealthBody {
  status?: unknown;
  setup?: { logs?: unknown; started_at?: unknown } | null;
  user_healthcheck_error?: unknown;
}

/** The model's own reason for a status: its healthcheck's error, or a failed setup's last log line. */
function healthReason(status: string, body: HealthBody | undefined): string | undefined {
  const error = body?.user_healthcheck_error;
  if (typeof error === 'string' && error.trim()) return oneLine(error);
  const logs = status === 'SETUP_FAILED' ? body?.setup?.logs : undefined;
  if (typeof logs !== 'string') return undefined;
  const trimmed = logs.trimEnd();
  const last = trimmed.slice(Math.max(trimmed.lastIndexOf('\n'), trimmed.lastIndexOf('\r')) + 1).trim();
  return last ? oneLine(last) : undefined;
}

/** A response body's text, read up to `max` bytes (the rest is not read: `truncated`). */
async function readCapped(body: Dispatcher.ResponseData['body'], max: number): Promise<{ text: string; truncated: boolean }> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    const buf = chunk as Buffer;
    if (size + buf.length > max) {
      chunks.push(buf.subarray(0, max - size));
      body.destroy();
      return { text: Buffer.concat(chunks).toString('utf8'), truncated: true };
    }
    size += buf.length;
    chunks.push(buf);
  }
  return { text: Buffer.concat(chunks).toString('utf8'), truncated: false };
}

/** One line of printable text, at most REASON_MAX characters. */
function oneLine(text: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  return clean.length > REASON_MAX ? `${clean.slice(0, REASON_MAX - 1)}…` : clean;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** The server-sent events of a response body (eventsource-parser), ending with the body. */
async function* sseEvents(body: AsyncIterable<Buffer | string>): AsyncGenerator<CogStreamEvent> {
  const queue: CogStreamEvent[] = [];
  const parser = createParser({ onEvent: (e: EventSourceMessage) => queue.push({ event: e.event ?? 'message', data: e.data }) });
  const decoder = new TextDecoder();
  for await (const chunk of body) {
    parser.feed(typeof chunk === 'string' ? chunk : decoder.decode(chunk, { stream: true }));
    while (queue.length > 0) yield queue.shift()!;
  }
}
