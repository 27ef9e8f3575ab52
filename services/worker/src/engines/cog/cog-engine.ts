// The `cog` engine (docs/models.md): one attempt of a task is one prediction on the kind's Cog
// model server, named after the task and its attempt and recorded as the task's current
// prediction before it is created (@taskapi/domain, model-predictions.ts). The worker keeps the
// task's job and slot while the prediction runs and follows it by its event stream where the
// model streams, else by the webhooks the model server posts to the API. A run that finds a
// current prediction (after a crash, or a shutdown that handed the task back) re-attaches to it,
// or collects its result if it already ended; a retried request never starts a second one.
import {
  claimPrediction,
  forgetPrediction,
  modelWebhookUrl,
  predictionId,
  predictionProgress,
  progressFromLogs,
  readPrediction,
  TERMINAL_PREDICTION_STATUSES,
  type PredictionRecord,
  type PredictionRedis,
} from '@taskapi/domain';
import type { ModelWebhookTokens } from '@taskapi/crypto';
import type { EgressClient } from '@taskapi/egress';
import { EngineBusyError, EngineError, EngineInterruptedError, TaskInputError, WorkerShutdown, type Engine, type EngineInput, type EngineOutput } from '@taskapi/engines';
import type { FileStore } from '@taskapi/file-store';
import type { Logger } from '@taskapi/logger';
import { isPlatformFault, type PubSubFanout } from '@taskapi/service';
import { TASK_KIND_CATALOG, type TaskKind } from '@taskapi/task-kinds';
import { setTimeout as sleep } from 'node:timers/promises';
import { z } from 'zod';
import { safeSentence } from '../../domain/failure-message';
import { taskOutput } from './cog-output';
import type { CogPredictionRequest, CogServer, CogStreamEvent } from './cog-server';

/**
 * Webhook events asked for: a stream carries the rest itself; the final one is kept for a run that
 * re-attaches. Without a stream, `logs` for progress; never `start` (it says nothing the worker
 * needs, and would cost a POST, a Redis write and a wake-up per task).
 */
const STREAM_WEBHOOK_EVENTS = ['completed'] as const;
const ASYNC_WEBHOOK_EVENTS = ['logs', 'completed'] as const;

/** Without news, the prediction's record is read again this often (a missed wake-up costs at most this). */
const RECHECK_MS = 5_000;
/** After a stream is cut, the final webhook may be on its way: wait this long for it before re-attaching. */
const REATTACH_GRACE_MS = 2_000;
/** Cuts in a row, each without a new event, before the run stops re-attaching and waits for the final webhook. */
const MAX_EMPTY_REATTACHES = 5;
/** The tail of a stream's logs kept to read progress from. */
const LOG_TAIL_CHARS = 4096;

/** The part of a prediction object (Cog's JSON) the engine reads. */
const predictionSchema = z.looseObject({
  status: z.string(),
  output: z.unknown().optional(),
  error: z.unknown().optional(),
  logs: z.unknown().optional(),
  metrics: z.unknown().optional(),
});
type Prediction = z.output<typeof predictionSchema>;

export interface CogEngineDeps {
  kind: TaskKind;
  server: CogServer;
  redis: PredictionRedis;
  /** Wake-ups on PREDICTION_UPDATED_CHANNEL, by task. */
  updates: PubSubFanout;
  /** Where the API put webhook bodies too large to keep in Redis. */
  store: FileStore;
  egress: EgressClient;
  tokens: ModelWebhookTokens;
  /** The API's origin as model servers reach it (`COG_WEBHOOK_BASE_URL`). */
  webhookBaseUrl: string;
  /** `COG_INPUT_MAP_<KIND>`: our field name → the model's. */
  inputMap: Readonly<Record<string, string>> | undefined;
  outputMaxBytes: number;
  logger: Logger;
}

export function createCogEngine(deps: CogEngineDeps): Engine {
  return { run: (input, signal) => runPrediction(deps, input, signal) };
}

async function runPrediction(deps: CogEngineDeps, input: EngineInput, signal: AbortSignal): Promise<EngineOutput> {
  const { server, redis } = deps;
  const { id, fresh } = await claimPrediction(redis, input.publicId, predictionId(input.publicId, input.attempt ?? 1), deps.kind);
  let keep = false;
  let final: Prediction | undefined;
  server.started();
  try {
    // A new prediction is not sent to a server whose health check says all its slots are busy
    // (a re-attach is: Cog answers a running id whatever its load).
    if (fresh && (await server.busyNow())) throw server.busy('its health check says BUSY');
    // Nor to a model that cannot take what this kind sends (its schema, read once per setup): the
    // task stays queued, its kind not ready, until the model or COG_INPUT_MAP_<KIND> is mended
    // (not busy time: waiting longer would not mend it, and failing the task would not either).
    const mismatch = fresh ? await server.inputProblem() : undefined;
    if (mismatch) throw server.waitOn(mismatch, false);
    final = await followPrediction(deps, id, input, signal);
    if (final.status === 'succeeded') return await taskOutput(deps.kind, final.output, final.metrics, { egress: deps.egress, modelOrigin: server.origin, maxBytes: deps.outputMaxBytes, signal });
    if (final.status === 'failed') {
      const said = typeof final.error === 'string' ? final.error : undefined;
      throw new EngineError(`prediction ${id} failed: ${said?.slice(0, 300) ?? 'no error given'}`, false, safeSentence(said) ?? 'The model failed to process the task.');
    }
    throw new EngineError(`prediction ${id} was canceled on the model server`, true);
  } catch (err) {
    if ((signal.aborted && signal.reason instanceof WorkerShutdown) || isPlatformFault(err) || err instanceof EngineInterruptedError) {
      // Handed back (a worker stopping, PostgreSQL or Redis unavailable or forgetful): the next run
      // re-attaches to this prediction by its id (or collects its result).
      keep = true;
    } else if (final === undefined && !(err instanceof EngineBusyError) && !(err instanceof TaskInputError)) {
      // A deadline, a cancel, or a run that broke off before the prediction ended: nobody will read
      // it, so the GPU is freed now, not when the model would have finished. (Refused ones, busy or
      // 422, were never created.)
      await server.cancel(id).catch((e: unknown) =>
        deps.logger[signal.aborted ? 'warn' : 'info']('could not cancel a prediction', { public_id: input.publicId, prediction_id: id, error: (e as Error).message }),
      );
    }
    throw signal.aborted ? (signal.reason as Error) : err;
  } finally {
    server.ended();
    if (!keep) await forget(deps, input.publicId);
  }
}

/**
 * The prediction's final state: already known, or by following it (created now, or re-attached
 * to). It is always created by an asynchronous `PUT` (`Prefer: respond-async`), never by the
 * stream request: Cog cancels a prediction created by a stream request once its last stream
 * closes, and ours must outlive a worker that shuts down or a stream that is cut. Where the model
 * streams, the same `PUT` with `Accept: text/event-stream` then attaches a stream to it (Cog
 * answers a request for a running id with that prediction's stream, replayed from the start).
 */
async function followPrediction(deps: CogEngineDeps, id: string, input: EngineInput, signal: AbortSignal): Promise<Prediction> {
  const seen = new Set<string>();
  // Ended while no run followed it (its final webhook was kept): nothing to create.
  const known = await finalOf(deps, await readPrediction(deps.redis, input.publicId), id, seen, input);
  if (known) return known;
  const request = {
    id,
    input: modelInput(deps, input),
    webhook: modelWebhookUrl(deps.webhookBaseUrl, id, deps.tokens.token(id)),
  };
  // Once the server is known to stream, the stream carries progress and only the final webhook is
  // asked for; until then (and where it does not stream) the logs come by webhook too.
  const filter = deps.server.streams === true ? STREAM_WEBHOOK_EVENTS : ASYNC_WEBHOOK_EVENTS;
  await deps.server.startAsync({ ...request, webhook_events_filter: filter } satisfies CogPredictionRequest, signal);
  if (deps.server.tryStream) return followStream(deps, { ...request, webhook_events_filter: filter }, input, signal, seen);
  return (await awaitWebhooks(deps, id, input, signal, seen, Infinity)) as Prediction;
}

/**
 * Follows a created prediction by its stream, while its final webhook is awaited too: whichever
 * brings the final state first wins. A cut stream is attached again after a moment (the final
 * webhook may be on its way); if the prediction ended meanwhile, that `PUT` may start a second one
 * with the same id, which Cog cancels as soon as this run drops its stream on the first final.
 */
async function followStream(deps: CogEngineDeps, request: CogPredictionRequest, input: EngineInput, signal: AbortSignal, seen: Set<string>): Promise<Prediction> {
  const stop = new AbortController();
  const following = AbortSignal.any([signal, stop.signal]);
  const byWebhook = awaitWebhooks(deps, request.id, input, following, seen, Infinity) as Promise<Prediction>;
  byWebhook.catch(() => undefined);
  const final = byWebhook.then((prediction) => ({ final: prediction }));
  try {
    let emptyCuts = 0;
    // Cog replays a prediction's events from its start to each stream: only events past the most
    // any stream of this run saw are new.
    let mostEvents = 0;
    for (;;) {
      const streamed = await Promise.race([final, attachStream(deps, request, input, following)]);
      if (streamed.final) return streamed.final;
      // The server does not stream this model, or took no stream now: the webhooks say the rest.
      if (!('events' in streamed) || streamed.events === undefined) return await byWebhook;
      // Cut (or the server's replay buffer lost events): the final webhook may be on its way.
      const graced = await Promise.race([final, sleep(REATTACH_GRACE_MS, undefined, { signal: following }).then(() => undefined)]);
      if (graced) return graced.final;
      emptyCuts = streamed.events > mostEvents ? 0 : emptyCuts + 1;
      mostEvents = Math.max(mostEvents, streamed.events);
      if (emptyCuts >= MAX_EMPTY_REATTACHES) {
        // Something between keeps cutting the stream: the final webhook still comes.
        deps.logger.warn('prediction stream keeps closing without news; following its webhooks', { public_id: input.publicId, prediction_id: request.id });
        return await byWebhook;
      }
      deps.logger.info('prediction stream cut; re-attaching', { public_id: input.publicId, prediction_id: request.id });
    }
  } catch (err) {
    if (signal.aborted) throw signal.reason as Error;
    throw err;
  } finally {
    stop.abort();
  }
}

/** One stream of the prediction, read to its end: its final state, or how many events came before it ended without one; `{}` when no stream was had. */
async function attachStream(deps: CogEngineDeps, request: CogPredictionRequest, input: EngineInput, signal: AbortSignal): Promise<{ final?: Prediction; events?: number }> {
  let stream;
  try {
    stream = await deps.server.stream(request, signal);
  } catch (err) {
    if (signal.aborted) throw signal.reason as Error;
    // The server is gone or failing (it may have restarted and lost the prediction): the attempt
    // fails and is retried, instead of waiting for a final webhook that may never come.
    if (err instanceof EngineError && err.retryable) throw err;
    // Refused (too many subscribers, or busy because the prediction just ended): follow by webhook.
    deps.logger.info('could not attach to a prediction stream; following its webhooks', { public_id: input.publicId, prediction_id: request.id, reason: (err as Error).message });
    return {};
  }
  if (stream.kind === 'not-streaming') return {};
  return readStream(stream.events, input, signal);
}

/** Reads a prediction stream to its `completed` event; `final` is undefined when it ended without one. */
async function readStream(events: AsyncIterable<CogStreamEvent>, input: EngineInput, signal: AbortSignal): Promise<{ final?: Prediction; events: number }> {
  let count = 0;
  let logs = '';
  try {
    for await (const e of events) {
      count++;
      if (e.event === 'completed') return { final: parsePrediction(e.data), events: count };
      if (e.event === 'error') return { events: count };
      if (e.event === 'log') {
        const data = (safeJson(e.data) as { data?: unknown } | undefined)?.data;
        if (typeof data !== 'string') continue;
        logs = (logs + data).slice(-LOG_TAIL_CHARS);
        const p = progressFromLogs(logs);
        if (p !== null) input.progress?.(p);
      } else if (e.event === 'metric') {
        const m = safeJson(e.data) as { name?: unknown; value?: unknown } | undefined;
        if (m?.name === 'progress') {
          const p = predictionProgress(undefined, { progress: m.value });
          if (p !== null) input.progress?.(p);
        }
      }
    }
  } catch (err) {
    if (signal.aborted) throw signal.reason as Error;
    // A connection reset mid-stream is a cut like an early end; what the server said (garbage) is not.
    if (err instanceof EngineError || !(err instanceof Error)) throw err;
  }
  return { events: count };
}

/**
 * Follows the prediction through what the API kept of its webhooks, until it is final or
 * `maxWaitMs` passed without it (then undefined). Every wait is registered before the record is
 * read, so a wake-up cannot slip between the two; a missed one costs at most RECHECK_MS.
 */
async function awaitWebhooks(deps: CogEngineDeps, id: string, input: EngineInput, signal: AbortSignal, seen: Set<string>, maxWaitMs: number): Promise<Prediction | undefined> {
  const giveUpAt = Date.now() + maxWaitMs;
  for (;;) {
    if (signal.aborted) throw signal.reason as Error;
    const next = nextUpdate(deps.updates, input.publicId, Math.min(RECHECK_MS, Math.max(0, giveUpAt - Date.now())), signal);
    try {
      const record = await readPrediction(deps.redis, input.publicId);
      // Gone (Redis lost it, or another run of the task ended it): this run hands the task back.
      if (record.current === null) throw new EngineInterruptedError(`the record of prediction ${id} is gone`);
      if (record.current !== id) throw new EngineError(`prediction ${id} is no longer the task's current one`, true);
      if (record.progress !== null) input.progress?.(record.progress);
      const final = await finalOf(deps, record, id, seen, input);
      if (final) return final;
      if (Date.now() >= giveUpAt) return undefined;
      await next.woken;
    } finally {
      next.end();
    }
  }
}

/** Resolves on the task's next prediction update (or a resubscription), after `ms`, or when `signal` aborts. */
function nextUpdate(updates: PubSubFanout, publicId: string, ms: number, signal: AbortSignal): { woken: Promise<void>; end(): void } {
  let end!: () => void;
  const woken = new Promise<void>((resolve) => {
    const timer = setTimeout(finish, ms);
    const stop = updates.listen(publicId, finish);
    signal.addEventListener('abort', finish, { once: true });
    function finish(): void {
      clearTimeout(timer);
      stop();
      signal.removeEventListener('abort', finish);
      resolve();
    }
    end = finish;
  });
  return { woken, end };
}

/** The record's final prediction, if it has one: inline, or in a large body (each read once). */
async function finalOf(deps: CogEngineDeps, record: PredictionRecord, id: string, seen: Set<string>, input: EngineInput): Promise<Prediction | undefined> {
  if (record.current !== id) return undefined;
  if (record.payload !== null && record.status !== null && TERMINAL_PREDICTION_STATUSES.includes(record.status)) return parsePrediction(record.payload);
  for (const ref of record.refs) {
    if (seen.has(ref)) continue;
    seen.add(ref);
    const object = await deps.store.get(ref);
    if (!object) continue;
    const chunks: Buffer[] = [];
    for await (const chunk of object.body) chunks.push(chunk as Buffer);
    const prediction = parsePrediction(Buffer.concat(chunks).toString('utf8'));
    const p = predictionProgress(prediction.logs, prediction.metrics);
    if (p !== null) input.progress?.(p);
    if (TERMINAL_PREDICTION_STATUSES.includes(prediction.status)) return prediction;
  }
  return undefined;
}

/** The model's input: the kind's fields under their own names (renamed by COG_INPUT_MAP_<KIND>); an image as a `data:` URL. */
function modelInput(deps: CogEngineDeps, input: EngineInput): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const field of TASK_KIND_CATALOG[deps.kind].engine.modelInputs) {
    const value = field === 'image' && input.image ? `data:${input.image.contentType};base64,${input.image.data.toString('base64')}` : input.params[field];
    if (value !== undefined) out[deps.inputMap?.[field] ?? field] = value;
  }
  return out;
}

function parsePrediction(text: string): Prediction {
  const parsed = predictionSchema.safeParse(safeJson(text));
  if (!parsed.success) throw new EngineError('the model server sent a prediction that is not one', true, 'The model server sent an answer that is not a prediction.');
  return parsed.data;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * A task ended without its run (its job was given up after worker crashes): the prediction it
 * left on the model server is cancelled, since nobody will read it, and its record forgotten.
 */
export async function abandonPrediction(deps: Pick<CogEngineDeps, 'server' | 'redis' | 'store' | 'logger'>, publicId: string): Promise<void> {
  let current: string | null;
  try {
    ({ current } = await readPrediction(deps.redis, publicId));
  } catch (err) {
    deps.logger.warn('could not look up the prediction of an ended task; it expires on its own', { public_id: publicId, error: (err as Error).message });
    return;
  }
  if (current === null) return;
  await deps.server.cancel(current).catch((e: unknown) => deps.logger.warn('could not cancel an abandoned prediction', { public_id: publicId, prediction_id: current, error: (e as Error).message }));
  await forget(deps, publicId);
}

/** The run is over: the next one starts a new prediction. Large bodies the API stored go too. */
async function forget(deps: Pick<CogEngineDeps, 'redis' | 'store' | 'logger'>, publicId: string): Promise<void> {
  try {
    const refs = await forgetPrediction(deps.redis, publicId);
    if (refs.length > 0) await deps.store.deleteMany(refs);
  } catch (err) {
    deps.logger.warn('could not forget a finished prediction; its record expires on its own (large bodies it kept stay in the store)', { public_id: publicId, error: (err as Error).message });
  }
}
