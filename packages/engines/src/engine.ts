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
  /**
   * How far the run is, from 0 to 1, when the engine can tell (e.g. per video frame). Call it as
   * often as is natural: the caller throttles what it stores.
   */
  progress?: (fraction: number) => void;
  /** The task's attempt (1 for its first run): a model server's prediction is named after task and attempt. */
  attempt?: number;
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
 * Runs one task kind. Implementations must stop promptly when `signal` aborts (the deadline, a
 * cancel, or shutdown: see `WorkerShutdown`) by rejecting; throw `TaskInputError` for input the
 * engine can never process, `EngineBusyError` when it cannot take the task now.
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

/**
 * The engine cannot take the task now (a model server at capacity, or still starting): the task
 * goes back to its account's line without spending an attempt, at the front, and is offered again
 * after `retryInMs`. Not a failure.
 */
export class EngineBusyError extends Error {
  override name = 'EngineBusyError';
  constructor(
    message: string,
    readonly retryInMs: number,
    /**
     * Whether the wait counts toward the task's busy time (MODEL_BUSY_TIMEOUT_MS): a model server at
     * capacity or not ready does; one that cannot take what the kind sends (its operator's to mend)
     * does not, and its tasks stay queued.
     */
    readonly counted = true,
  ) {
    super(message);
  }
}

/**
 * The engine's run was cut off by a fault of the platform's own, not of the task (its state in
 * Redis vanished: a Redis that restarted empty). Like an unreachable PostgreSQL or Redis, the run
 * is handed back without spending an attempt (docs/high-availability.md, "Faults the platform
 * owns"), and its next run starts afresh.
 */
export class EngineInterruptedError extends Error {
  override name = 'EngineInterruptedError';
}

/**
 * Why a run's signal aborted, when it is not the deadline (whose reason is a `TimeoutError`):
 * the worker is shutting down (the task goes back to the queue and its next run may pick up where
 * this one left: an engine must not cancel work it can re-attach to), or the task was cancelled
 * (stop and discard everything).
 */
export class WorkerShutdown extends Error {
  override name = 'WorkerShutdown';
  constructor() {
    super('worker shutting down');
  }
}

/** See `WorkerShutdown`. */
export class TaskCancelled extends Error {
  override name = 'TaskCancelled';
  constructor() {
    super('task cancelled');
  }
}
