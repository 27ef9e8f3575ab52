import type { TaskKind } from '@taskapi/task-kinds';

/** An image handed to an engine (a face-detection input, already fetched or decoded from base64). */
export interface EngineImage {
  contentType: string;
  data: Buffer;
}

/** What an engine is asked to do: the task's validated parameters as stored in `tasks.input`. */
export interface EngineInput {
  kind: TaskKind;
  publicId: string;
  /** `tasks.input`: e.g. `{prompt, width, height}`, `{prompt, duration_seconds}`. */
  params: Record<string, unknown>;
  /** Face detection only: the image bytes (from `image_base64` or fetched from `image_url`). */
  image?: EngineImage;
}

/** A file produced by an engine; stored under `FILES_DIR/<public_id>/<name>`. */
export interface EngineFile {
  /** A plain file name: letters, digits, `.`, `-`, `_`. */
  name: string;
  contentType: string;
  data: Buffer;
}

export interface EngineOutput {
  /** Stored as the task's `result` (JSON). */
  result?: unknown;
  files?: EngineFile[];
}

/**
 * Runs one task kind. Implementations must stop promptly when `signal` aborts (per-kind timeout or
 * shutdown) by rejecting; throw `TaskInputError` for input the engine can never process.
 */
export interface Engine {
  run(input: EngineInput, signal: AbortSignal): Promise<EngineOutput>;
}

/** The input can never succeed (undecodable image, unsupported format): fails with `invalid_input`, no retry. */
export class TaskInputError extends Error {
  override name = 'TaskInputError';
}

/** The input image could not be fetched from `image_url`: fails with `image_fetch_failed`, no retry. */
export class ImageFetchError extends Error {
  override name = 'ImageFetchError';
  /**
   * @param reason why, for the task's owner: ends "The image at image_url could not be fetched: …"
   *   (see domain/failure-message.ts), so no secrets and no internals.
   */
  constructor(
    message: string,
    readonly reason: string,
  ) {
    super(message);
  }
}

/** The engine failed. `retryable` failures are retried (BullMQ attempts); others fail the task at once (`engine_error`). */
export class EngineError extends Error {
  override name = 'EngineError';
  /**
   * @param publicMessage the task's `error_message` when this ends the task: a sentence for its
   *   owner, never the internal `message` (which may name hosts, paths or tool output).
   */
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly publicMessage?: string,
  ) {
    super(message);
  }
}
