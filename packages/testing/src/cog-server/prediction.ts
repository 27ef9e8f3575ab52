// One prediction's state as coglet keeps it (crates/coglet/src/prediction.rs): the JSON every
// response, webhook and `completed` event carries, the SSE events with their replay buffer, and the
// webhooks each change fires.
import { applyMetric, validMetricName } from './metrics';
import type { MetricMode } from './model';
import type { WebhookSender } from './webhook-sender';

export type PredictionStatus = 'starting' | 'processing' | 'succeeded' | 'failed' | 'canceled';

/** The prediction JSON: `metrics.predict_time` (seconds since creation) once terminal. */
export interface PredictionJson {
  id: string;
  status: PredictionStatus;
  logs: string;
  output?: unknown;
  error?: string;
  metrics: Record<string, unknown>;
}

/** One server-sent event, named as coglet names them. */
export type StreamEvent =
  | { event: 'start'; data: { id: string; status: PredictionStatus } }
  | { event: 'output'; data: { chunk: unknown; index: number } }
  | { event: 'log'; data: { source: 'stdout' | 'stderr'; data: string } }
  | { event: 'metric'; data: { name: string; value: unknown; mode: MetricMode } }
  | { event: 'completed'; data: PredictionJson };

/** What a stream attaching now gets: the buffered events, how many were dropped before them, and live ones after. */
export interface StreamSubscription {
  replay: StreamEvent[];
  /** Events that fell out of the replay buffer; a stream that missed any ends with an `error` event. */
  skipped: number;
  unsubscribe(): void;
}

export class Prediction {
  private currentStatus: PredictionStatus = 'starting';
  private logs = '';
  private readonly outputs: unknown[] = [];
  private final: { output: unknown } | undefined;
  private error: string | undefined;
  private readonly metrics: Record<string, unknown> = {};
  private readonly createdAt = performance.now();
  private predictTime: number | undefined;
  private readonly history: StreamEvent[] = [];
  private skipped = 0;
  private readonly listeners = new Set<(event: StreamEvent) => void>();
  private settle!: () => void;
  /** Aborts when the prediction is cancelled; the model's run sees it as its signal. */
  readonly abort = new AbortController();
  /** Resolves once the prediction is terminal. */
  readonly settled = new Promise<void>((resolve) => (this.settle = resolve));

  constructor(
    readonly id: string,
    private readonly webhook: WebhookSender | undefined,
    /** Events kept for streams that attach later (coglet: `COG_STREAM_HISTORY_CAPACITY`, 1024; 0 keeps none). */
    private readonly historyCapacity: number,
  ) {}

  get status(): PredictionStatus {
    return this.currentStatus;
  }

  get terminal(): boolean {
    return this.currentStatus === 'succeeded' || this.currentStatus === 'failed' || this.currentStatus === 'canceled';
  }

  /** The prediction JSON now: before the end, `output` is what was output so far, when anything was. */
  snapshot(): PredictionJson {
    const json: PredictionJson = { id: this.id, status: this.currentStatus, logs: this.logs, metrics: { ...this.metrics } };
    if (this.final) json.output = this.final.output;
    else if (this.outputs.length) json.output = [...this.outputs];
    if (this.error !== undefined) json.error = this.error;
    if (this.predictTime !== undefined) json.metrics.predict_time = this.predictTime;
    return json;
  }

  /**
   * The run has begun. The `start` event and webhook carry `processing`: docs/http.md says the
   * `start` webhook has status `starting`, but coglet sends it from set_processing (we follow the code).
   */
  setProcessing(): void {
    if (this.currentStatus !== 'starting') return;
    this.currentStatus = 'processing';
    this.emit({ event: 'start', data: { id: this.id, status: this.currentStatus } });
    this.webhook?.send('start', this.snapshot());
  }

  appendLog(data: string, source: 'stdout' | 'stderr' = 'stdout'): void {
    if (this.terminal) return;
    this.logs += data;
    this.emit({ event: 'log', data: { source, data } });
    this.webhook?.send('logs', this.snapshot());
  }

  /** Records a metric: an event, no webhook (coglet's set_metric fires none). Invalid names are ignored. */
  setMetric(name: string, value: unknown, mode: MetricMode): void {
    if (this.terminal || !validMetricName(name)) return;
    this.emit({ event: 'metric', data: { name, value, mode } });
    applyMetric(this.metrics, name, value, mode);
  }

  appendOutput(chunk: unknown): void {
    if (this.terminal) return;
    this.outputs.push(chunk);
    this.emit({ event: 'output', data: { chunk, index: this.outputs.length - 1 } });
    this.webhook?.send('output', this.snapshot());
  }

  /**
   * Succeeded with what was output: a list when the run yielded or returned one, else the single
   * value (null when none), as coglet's wrap_outputs decides.
   */
  succeed(asList: boolean): void {
    const outputs = [...this.outputs];
    const output = asList || outputs.length > 1 ? outputs : (outputs[0] ?? null);
    this.finish('succeeded', () => (this.final = { output }));
  }

  fail(error: string): void {
    this.finish('failed', () => (this.error = error));
  }

  cancel(): void {
    this.finish('canceled', () => undefined);
  }

  /** Attaches a stream: replay first, then `listener` gets each new event. */
  subscribe(listener: (event: StreamEvent) => void): StreamSubscription {
    this.listeners.add(listener);
    return { replay: [...this.history], skipped: this.skipped, unsubscribe: () => this.listeners.delete(listener) };
  }

  get subscribers(): number {
    return this.listeners.size;
  }

  private finish(status: PredictionStatus, record: () => void): void {
    if (this.terminal) return; // the first outcome stands (coglet's terminal-state guard)
    this.currentStatus = status;
    record();
    this.predictTime = (performance.now() - this.createdAt) / 1000;
    const json = this.snapshot();
    this.emit({ event: 'completed', data: json });
    this.webhook?.sendTerminal(json);
    this.settle();
  }

  private emit(event: StreamEvent): void {
    if (this.historyCapacity > 0) {
      if (this.history.length === this.historyCapacity) {
        this.history.shift();
        this.skipped++;
      }
      this.history.push(event);
    }
    for (const listener of [...this.listeners]) listener(event);
  }
}
