// Webhooks from Cog model servers (docs/models.md): a worker running a task on a model server
// names the prediction and gives the server a webhook URL under `/internal/model-webhooks/`
// carrying the prediction id and its token (an HMAC of the id: `ModelWebhookTokens`). This keeps
// what each webhook says of the task's current prediction in Redis and wakes the worker following
// it (@taskapi/domain, model-predictions.ts). A body small enough is read here (status, progress,
// the final prediction); a larger one (a final prediction carrying a video as a `data:` URL) is
// streamed to the file store unread, and the worker reads it.
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import { predictionProgress, recordPredictionUpdate, taskOfPrediction, TERMINAL_PREDICTION_STATUSES, type PredictionRedis } from '@taskapi/domain';
import type { ModelWebhookTokens } from '@taskapi/crypto';
import { StorageUnavailableError, type FileStore } from '@taskapi/file-store';
import { z } from 'zod';
import { ApiError, unavailable } from '../errors';

/** Bodies up to this size are read here; larger ones go to the file store for the worker. */
export const READ_LIMIT_BYTES = 1024 * 1024;

/**
 * A body without a declared length (chunked) must be held in memory before it can be stored:
 * taken up to this size only. Cog sends its webhooks with a `Content-Length`.
 */
export const CHUNKED_LIMIT_BYTES = 64 * 1024 * 1024;

/** The part of Cog's prediction object read here. */
const predictionSchema = z.looseObject({ status: z.string().min(1).max(40), logs: z.unknown().optional(), metrics: z.unknown().optional() });

export interface ModelWebhookDeps {
  redis: PredictionRedis;
  store: FileStore;
  tokens: ModelWebhookTokens;
  /** Largest body taken (the output size cap as base64, plus room for the rest). */
  maxBodyBytes: number;
}

/** What became of a webhook: kept for the task's run, or ignored (not its current prediction: late, or the task ended). */
export type ModelWebhookOutcome = 'recorded' | 'ignored';

/** The task of a webhook URL's prediction, when the token is right; else `NOT_FOUND` (nothing to learn by guessing). */
export function authorizeModelWebhook(tokens: ModelWebhookTokens, predictionId: string, token: string): string {
  const publicId = taskOfPrediction(predictionId);
  if (!publicId || !tokens.verify(predictionId, token)) throw new ApiError('NOT_FOUND');
  return publicId;
}

/**
 * Keeps one webhook of prediction `predictionId` of task `publicId`. `length` is the body's
 * declared length (undefined when chunked); `body` its bytes.
 */
export async function recordModelWebhook(
  deps: ModelWebhookDeps,
  publicId: string,
  predictionId: string,
  body: Readable,
  length: number | undefined,
): Promise<ModelWebhookOutcome> {
  if (length !== undefined && length > deps.maxBodyBytes) {
    body.resume();
    throw new ApiError('BODY_TOO_LARGE', { params: { limit: deps.maxBodyBytes } });
  }
  if (length !== undefined && length > READ_LIMIT_BYTES) return storeLarge(deps, publicId, predictionId, { stream: body, size: length });
  const bytes = await readUpTo(body, Math.min(deps.maxBodyBytes, CHUNKED_LIMIT_BYTES));
  if (bytes.length > READ_LIMIT_BYTES) return storeLarge(deps, publicId, predictionId, bytes);

  let json: unknown;
  try {
    json = JSON.parse(bytes.toString('utf8'));
  } catch {
    throw new ApiError('MALFORMED_JSON');
  }
  const parsed = predictionSchema.safeParse(json);
  if (!parsed.success) throw new ApiError('INVALID_REQUEST', { params: { name: 'Request body', problem: 'must be a prediction object with a status' } });
  const { status, logs, metrics } = parsed.data;
  const terminal = TERMINAL_PREDICTION_STATUSES.includes(status);
  return record(deps, publicId, { predictionId, status, progress: predictionProgress(logs, metrics), payload: terminal ? bytes.toString('utf8') : null, ref: null });
}

/** A body too large to read here: stored as it came, for the worker to read; removed again when not wanted. */
async function storeLarge(deps: ModelWebhookDeps, publicId: string, predictionId: string, body: Buffer | { stream: Readable; size: number }): Promise<ModelWebhookOutcome> {
  const ref = `predictions/${publicId}/${predictionId}-${randomBytes(6).toString('hex')}.json`;
  try {
    await deps.store.put(ref, body, 'application/json');
  } catch (err) {
    if (err instanceof StorageUnavailableError) throw unavailable('storage', err);
    // The body ended short of its length, or broke off.
    throw new ApiError('BODY_UNREADABLE', { cause: err });
  }
  let outcome: ModelWebhookOutcome;
  try {
    outcome = await record(deps, publicId, { predictionId, status: '', progress: null, payload: null, ref });
  } catch (err) {
    // Not kept (Redis unavailable: the model server sends it again), so not left in the store either.
    await deps.store.deleteMany([ref]).catch(() => undefined);
    throw err;
  }
  if (outcome === 'ignored') await deps.store.deleteMany([ref]).catch(() => undefined);
  return outcome;
}

async function record(deps: ModelWebhookDeps, publicId: string, update: Parameters<typeof recordPredictionUpdate>[2]): Promise<ModelWebhookOutcome> {
  try {
    return (await recordPredictionUpdate(deps.redis, publicId, update)) ? 'recorded' : 'ignored';
  } catch (err) {
    // The model server retries a final webhook that got a 5xx.
    throw unavailable('redis', err);
  }
}

/** The body's bytes, refusing more than `max` (413). */
async function readUpTo(body: Readable, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      size += (chunk as Buffer).length;
      if (size > max) {
        body.destroy();
        throw new ApiError('BODY_TOO_LARGE', { params: { limit: max } });
      }
      chunks.push(chunk as Buffer);
    }
  } catch (err) {
    if (err instanceof ApiError) throw err;
    throw new ApiError('BODY_UNREADABLE', { cause: err });
  }
  return Buffer.concat(chunks);
}
