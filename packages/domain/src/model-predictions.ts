// A task run's prediction on a Cog model server (docs/models.md). The worker running the task
// names the prediction (`predictionId`: the task and its attempt) and records it as the task's
// current prediction before creating it; the model server's webhooks reach the API, which keeps
// what they say here and wakes the worker; a worker that restarts (or takes over after a crash or
// a shutdown) finds the prediction here and re-attaches to it instead of starting a second one.
//
// One Redis hash per task, `taskapi:prediction:{<public_id>}`:
//   current   the prediction id the task's run uses
//   status    the latest status heard of it (`starting`, `processing`, then a terminal one, which sticks)
//   progress  0 to 1, from its logs or its `progress` metric
//   payload   the terminal prediction JSON, when its webhook body was small
//   refs      file-store keys (space-separated) of webhook bodies too large to read in the API; the worker reads them
// Updates are announced on PREDICTION_UPDATED_CHANNEL as `<public_id> <prediction_id>`.
import type { Cluster, Redis } from 'ioredis';
import { z } from 'zod';
import { domainScripts } from './domain-scripts';


export const PREDICTION_UPDATED_CHANNEL = 'taskapi:prediction-updated';

/** The API's route for model webhooks: `<base>/internal/model-webhooks/<prediction id>/<token>`. */
export const MODEL_WEBHOOK_PATH = '/internal/model-webhooks';

/** The webhook URL a prediction is created with (`baseUrl`: the API as model servers reach it). */
export function modelWebhookUrl(baseUrl: string, predictionId: string, token: string): string {
  return `${baseUrl}${MODEL_WEBHOOK_PATH}/${encodeURIComponent(predictionId)}/${token}`;
}

/** Kept this long after its last update: longer than any task may run. */
const PREDICTION_TTL_SECONDS = 7 * 24 * 3600;

/** Prediction statuses after which nothing more happens (Cog's `succeeded`, `failed`, `canceled`). */
export const TERMINAL_PREDICTION_STATUSES: readonly string[] = ['succeeded', 'failed', 'canceled'];

export function predictionKey(publicId: string): string {
  return `taskapi:prediction:{${publicId}}`;
}

/** The id of a task's prediction for one attempt: `<public_id>-<attempt>` (public ids hold no `-`). */
export function predictionId(publicId: string, attempt: number): string {
  return `${publicId}-${attempt}`;
}

/** The task of a prediction id, or null when it is not one of ours. */
export function taskOfPrediction(id: string): string | null {
  const m = /^(task_[A-Za-z0-9]{1,64})-([1-9][0-9]{0,5})$/.exec(id);
  return m ? m[1]! : null;
}

/** What the hash holds about a task's prediction. */
export interface PredictionRecord {
  current: string | null;
  /** The task kind whose model server runs it (so whoever abandons it knows which server to ask). */
  kind: string | null;
  status: string | null;
  progress: number | null;
  /** The terminal prediction JSON (text), when it came inline. */
  payload: string | null;
  /** File-store keys of large webhook bodies, oldest first. */
  refs: string[];
}

/** What one webhook of the current prediction says (fields the API could read; empty strings when none). */
export interface PredictionUpdate {
  predictionId: string;
  /** The body's status, or '' when the body was too large to read (then `ref` is set). */
  status: string;
  progress: number | null;
  /** The body itself when its status is terminal and it was read. */
  payload: string | null;
  /** Where a body too large to read was stored. */
  ref: string | null;
}

/** The most files a prediction's output may hold (a list); a worker refuses more (`engine_error`). */
export const MAX_PREDICTION_OUTPUT_FILES = 20;

/** The Redis clients the prediction records live on. */
export type PredictionRedis = Redis | Cluster;

const claimScript = domainScripts.define({
  command: 'claim-prediction',
  keys: (i: { publicId: string; candidate: string; kind: string }) => [predictionKey(i.publicId)],
  args: (i) => [i.candidate, PREDICTION_TTL_SECONDS, i.kind],
  reply: (raw) => {
    const [id, fresh] = z.tuple([z.string(), z.number()]).parse(raw);
    return { id, fresh: fresh === 1 };
  },
});

/**
 * The prediction the task's run uses: the one recorded already (a run before this one created it
 * and did not see it end; `fresh` false), else `candidate`, recorded now (`fresh` true).
 */
export function claimPrediction(redis: PredictionRedis, publicId: string, candidate: string, kind: string): Promise<{ id: string; fresh: boolean }> {
  return claimScript(redis, { publicId, candidate, kind });
}

const updateScript = domainScripts.define({
  command: 'record-prediction-update',
  keys: (i: { publicId: string; update: PredictionUpdate }) => [predictionKey(i.publicId)],
  args: ({ publicId, update: u }) => [
    u.predictionId,
    u.status,
    u.progress === null ? '' : String(u.progress),
    u.payload ?? '',
    u.ref ?? '',
    PREDICTION_TTL_SECONDS,
    PREDICTION_UPDATED_CHANNEL,
    `${publicId} ${u.predictionId}`,
  ],
  reply: (raw) => raw === 1,
});

/** Records a webhook of the task's current prediction and wakes its worker; false when it is not the current one. */
export function recordPredictionUpdate(redis: PredictionRedis, publicId: string, update: PredictionUpdate): Promise<boolean> {
  return updateScript(redis, { publicId, update });
}

/** What the hash holds of the task's prediction. */
export async function readPrediction(redis: PredictionRedis, publicId: string): Promise<PredictionRecord> {
  const h = await redis.hgetall(predictionKey(publicId));
  const progress = h.progress === undefined ? NaN : Number(h.progress);
  return {
    current: h.current ?? null,
    kind: h.kind ?? null,
    status: h.status ?? null,
    progress: Number.isFinite(progress) ? progress : null,
    payload: h.payload ?? null,
    refs: h.refs ? h.refs.split(' ') : [],
  };
}

/**
 * Tasks cancelled while their prediction was followed by no run (handed back at a shutdown, then
 * cancelled while queued: the job is removed, so no run will see it), for a worker to cancel the
 * prediction on its model server (`takeOrphanedPredictions`).
 */
export const ORPHANED_PREDICTIONS_KEY = 'taskapi:predictions:orphaned';

/** The subset of an ioredis client the orphan list uses. */
export interface OrphanRedis {
  hexists(key: string, field: string): Promise<number>;
  sadd(key: string, ...members: string[]): Promise<number>;
  spop(key: string, count: number): Promise<string[]>;
}

/** After a cancel: notes the task when it left a prediction (one HEXISTS; nothing for tasks that never had one). */
export async function noteCancelledPrediction(redis: OrphanRedis, publicId: string): Promise<void> {
  if ((await redis.hexists(predictionKey(publicId), 'current')) === 1) await redis.sadd(ORPHANED_PREDICTIONS_KEY, publicId);
}

/** Takes up to `count` noted tasks (each taken once, by one worker). */
export function takeOrphanedPredictions(redis: OrphanRedis, count: number): Promise<string[]> {
  return redis.spop(ORPHANED_PREDICTIONS_KEY, count);
}

/** Notes tasks again (taken by a worker that does not serve their kind). */
export async function returnOrphanedPredictions(redis: OrphanRedis, publicIds: readonly string[]): Promise<void> {
  if (publicIds.length > 0) await redis.sadd(ORPHANED_PREDICTIONS_KEY, ...publicIds);
}

const forgetScript = domainScripts.define({
  command: 'forget-prediction',
  keys: (i: { publicId: string }) => [predictionKey(i.publicId)],
  args: () => [],
  reply: (raw) => (typeof raw === 'string' && raw !== '' ? raw.split(' ') : []),
});

/**
 * Forgets the task's prediction (its run is over: the next run starts a new one). Returns the
 * file-store keys of the large bodies the API kept for it, for the caller to delete.
 */
export function forgetPrediction(redis: PredictionRedis, publicId: string): Promise<string[]> {
  return forgetScript(redis, { publicId });
}

/**
 * Progress from a prediction's logs and metrics: a `progress` metric (0 to 1, or a percentage), or
 * else the last tqdm-style line of the logs (`" 40%|████  | 4/10 [...]"`, or `4/10`). Null when
 * neither says.
 */
export function predictionProgress(logs: unknown, metrics: unknown): number | null {
  const metric = typeof metrics === 'object' && metrics !== null ? (metrics as Record<string, unknown>).progress : undefined;
  if (typeof metric === 'number' && Number.isFinite(metric) && metric >= 0) return Math.min(1, metric > 1 ? metric / 100 : metric);
  return typeof logs === 'string' ? progressFromLogs(logs) : null;
}

/** The progress the last tqdm-style line of `logs` shows; null when none does. Reads only the tail. */
export function progressFromLogs(logs: string): number | null {
  const lines = logs.slice(-4096).split(/[\r\n]+/);
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i]!;
    const percent = /(\d{1,3}(?:\.\d+)?)%\|/.exec(line);
    if (percent) return Math.min(1, Number(percent[1]) / 100);
    const ratio = /(?:^|\s)(\d+)\/(\d+)(?:\s|$|\[)/.exec(line);
    if (ratio && Number(ratio[2]) > 0) return Math.min(1, Number(ratio[1]) / Number(ratio[2]));
  }
  return null;
}
