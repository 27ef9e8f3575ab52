// The predictions a server runs, as coglet's PredictionService keeps them
// (crates/coglet/src/service.rs): a slot per running prediction, the in-flight ones by id (a
// finished one is forgotten at once, so the same id afterwards starts a new one), cancel by id.
// Beside that, for tests only, a record of every prediction ever created.
import { HealthState, type Admission } from './health';
import type { CogModel, RunContext } from './model';
import type { OutputFiles } from './output-files';
import { Prediction, type PredictionStatus } from './prediction';
import { WebhookSender, type TraceContext, type WebhookEvent, type WebhookSettings } from './webhook-sender';

/** What the test controls report of one prediction (times in ms since the epoch). */
export interface PredictionRecord {
  id: string;
  /** The input as the model got it (unknown fields dropped, defaults not applied). */
  input: Record<string, unknown>;
  status: PredictionStatus;
  createdAt: number;
  startedAt: number | null;
  completedAt: number | null;
  /** A cancel reached it: `POST /predictions/{id}/cancel`, a sync client or the last stream gone. */
  cancelRequested: boolean;
  /** `PUT /predictions/{id}` requests that created it or found it in flight. */
  puts: number;
  /** The `traceparent` header of the request that created it, if any. */
  traceparent: string | undefined;
  /**
   * Each webhook the throttle let through, when it did (sends go out one after another, so a
   * receiver's arrival times can be closer together than these).
   */
  webhooks: Array<{ event: WebhookEvent; at: number }>;
}

/** An in-flight prediction with what the service knows of it beside its state. */
export interface InFlight {
  prediction: Prediction;
  record: PredictionRecord;
  /** Created for a stream: cancelled when its last stream goes away (coglet's cancel_on_stream_drop). */
  cancelOnStreamDrop: boolean;
}

export interface WebhookRequest {
  url: string;
  events: WebhookEvent[];
  trace: TraceContext;
}

export interface PredictionServiceOptions {
  concurrency: number;
  historyCapacity: number;
  webhooks: WebhookSettings;
  files: OutputFiles;
}

export type Submitted = { inFlight: InFlight } | { refused: Exclude<Admission, 'ready'> };

export class PredictionService {
  readonly health = new HealthState();
  private readonly inFlight = new Map<string, InFlight>();
  private busySlots = 0;
  private records: PredictionRecord[] = [];
  private putCounts = new Map<string, number>();
  // Aborted on close: pending webhooks and retries stop, as in a container that was killed.
  private readonly stop = new AbortController();

  constructor(
    private readonly model: CogModel,
    private readonly opts: PredictionServiceOptions,
  ) {}

  get freeSlots(): number {
    return this.opts.concurrency - this.busySlots;
  }

  find(id: string): InFlight | undefined {
    return this.inFlight.get(id);
  }

  /** Counts a `PUT /predictions/{id}` (for the test controls), before anything else is decided. */
  countPut(id: string): void {
    this.putCounts.set(id, (this.putCounts.get(id) ?? 0) + 1);
    const found = this.inFlight.get(id);
    if (found) found.record.puts++;
  }

  /** Takes a slot and starts the run in the background, or says why not (503 / 409). */
  submit(id: string, input: Record<string, unknown>, opts: { webhook?: WebhookRequest; forStream: boolean; byPut: boolean; traceparent?: string | undefined }): Submitted {
    const admission = this.health.admission(this.freeSlots);
    if (admission !== 'ready') return { refused: admission };
    const { webhook } = opts;
    const record: PredictionRecord = {
      id,
      input,
      status: 'starting',
      createdAt: Date.now(),
      startedAt: null,
      completedAt: null,
      cancelRequested: false,
      puts: opts.byPut ? 1 : 0,
      traceparent: opts.traceparent,
      webhooks: [],
    };
    const sender =
      webhook &&
      new WebhookSender(webhook.url, new Set(webhook.events), webhook.trace, this.opts.webhooks, this.stop.signal, (event) =>
        record.webhooks.push({ event, at: Date.now() }),
      );
    const prediction = new Prediction(id, sender, this.opts.historyCapacity);
    const entry: InFlight = { prediction, record, cancelOnStreamDrop: opts.forStream };
    this.busySlots++;
    this.inFlight.set(id, entry);
    this.records.push(record);
    setImmediate(() => void this.run(entry, input));
    return { inFlight: entry };
  }

  /** Cancels the in-flight prediction `id`: true when there was one (200), false when not (404). */
  cancel(id: string): boolean {
    const found = this.inFlight.get(id);
    if (!found) return false;
    this.cancelEntry(found);
    return true;
  }

  /** A stream of `entry` went away: with none left, a prediction created for a stream is cancelled. */
  streamClosed(entry: InFlight): void {
    if (entry.cancelOnStreamDrop && entry.prediction.subscribers === 0 && !entry.prediction.terminal) this.cancelEntry(entry);
  }

  /** A sync request's client went away before the answer: its prediction is cancelled. */
  clientGone(entry: InFlight): void {
    if (!entry.prediction.terminal) this.cancelEntry(entry);
  }

  recorded(): PredictionRecord[] {
    return this.records.map((r) => ({ ...r, webhooks: [...r.webhooks] }));
  }

  putRequests(): Record<string, number> {
    return Object.fromEntries(this.putCounts);
  }

  /** Back to a fresh server: in-flight predictions cancelled, records and served files gone, health automatic. */
  reset(): void {
    for (const entry of this.inFlight.values()) this.cancelEntry(entry);
    this.records = [];
    this.putCounts = new Map();
    this.opts.files.clear();
    this.health.force(null);
  }

  /** Drops everything in flight: runs aborted, nothing more sent. */
  close(): void {
    this.stop.abort(new Error('the Cog server closed'));
    for (const { prediction } of this.inFlight.values()) prediction.abort.abort(new Error('the Cog server closed'));
  }

  private cancelEntry(entry: InFlight): void {
    entry.record.cancelRequested = true;
    entry.prediction.abort.abort(new Error('prediction canceled'));
  }

  private async run(entry: InFlight, input: Record<string, unknown>): Promise<void> {
    const { prediction, record } = entry;
    const { id, abort } = prediction;
    let yielded = false;
    const append = (chunk: unknown): void => prediction.appendOutput(this.opts.files.encode(id, chunk));
    const ctx: RunContext = {
      id,
      signal: abort.signal,
      log: (line) => prediction.appendLog(line.endsWith('\n') ? line : `${line}\n`),
      metric: (name, value, mode = 'replace') => prediction.setMetric(name, value, mode),
      output: (chunk) => {
        yielded = true;
        append(chunk);
      },
    };
    prediction.setProcessing();
    record.status = prediction.status;
    record.startedAt = Date.now();
    try {
      // A cancel that came before the run began still reaches it, through the aborted signal.
      const output = await this.model.run(input, ctx);
      // A returned list goes out element by element, as coglet's Python worker sends it.
      if (!yielded && Array.isArray(output)) output.forEach(append);
      else if (!yielded && output !== undefined && output !== null) append(output);
      prediction.succeed(yielded || Array.isArray(output));
    } catch (err) {
      if (abort.signal.aborted) prediction.cancel();
      else prediction.fail(err instanceof Error ? err.message : String(err));
    }
    record.status = prediction.status;
    record.completedAt = Date.now();
    this.busySlots--;
    if (this.inFlight.get(id) === entry) this.inFlight.delete(id);
  }
}
