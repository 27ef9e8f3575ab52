import type { InputSchema, InputValidation } from './input-schema';

/** How a metric combines with an earlier value of the same name (coglet's `MetricMode`). */
export type MetricMode = 'replace' | 'increment' | 'append';

/** A file a model returns or yields (Cog's `Path`): sent as a `data:` URL or served from `/_files`. */
export class CogFile {
  constructor(
    /** A plain file name such as `image.png`. */
    readonly name: string,
    readonly contentType: string,
    readonly data: Buffer,
  ) {}
}

/** What a model's run can do while it works. */
export interface RunContext {
  /** The prediction's id. */
  id: string;
  /** Aborts when the prediction is cancelled; the run should then reject promptly. */
  signal: AbortSignal;
  /** Writes a line to stdout: appended to `logs`, a `log` event, a `logs` webhook. */
  log(line: string): void;
  /** Records a metric (`mode` defaults to `replace`): a `metric` event, merged into `metrics`. */
  metric(name: string, value: unknown, mode?: MetricMode): void;
  /**
   * Yields one output (an iterator model): an `output` event and webhook. A run that yields
   * returns nothing; its output is the list of what it yielded.
   */
  output(chunk: unknown): void;
}

/**
 * A model as a Cog container runs one. `run` returns the output: a `CogFile`, JSON, or a list
 * (each element then goes out as its own `output` event, as coglet does with a returned list).
 */
export interface CogModel {
  name: string;
  /** Opted in to SSE (`@cog.streaming`); otherwise `Accept: text/event-stream` gets `406`. */
  streaming: boolean;
  /** The inputs, for `/openapi.json`. */
  inputSchema: InputSchema;
  /** Drops unknown fields and validates the rest (a failure is the `422` body's `detail`). */
  validate(input: unknown): InputValidation;
  /** Runs once while the server reports `STARTING` (Cog's `setup()`); a rejection is `SETUP_FAILED`. */
  setup?(): Promise<void>;
  /** Runs one prediction on the input `validate` returned (defaults not applied). */
  run(input: Record<string, unknown>, ctx: RunContext): Promise<unknown>;
}
