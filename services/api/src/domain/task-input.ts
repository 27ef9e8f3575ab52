import { MAX_IMAGE_BYTES, TASK_REQUEST_SCHEMAS, type TaskKind } from '@taskapi/task-kinds';
import { ApiError } from '../errors';
import { jsonDepth, topLevelMemberText } from './json-member-text';

/** Each kind's request schema; declared in the task-kinds catalog. */
export const createTaskSchemas = TASK_REQUEST_SCHEMAS;

/** Largest `payload`, as minified JSON text. */
export const MAX_PAYLOAD_BYTES = 64 * 1024;
/** Deepest nesting of arrays/objects in `payload`. */
export const MAX_PAYLOAD_DEPTH = 64;

export interface ImageUpload {
  contentType: 'image/png' | 'image/jpeg';
  data: Buffer;
}

const invalidImageOf = (problem: string, prefix: string) => new ApiError('INVALID_FIELD', { params: { name: `${prefix}image_base64`, problem } });

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DATA_URL = /^data:image\/(?:png|jpeg|jpg);base64,/i;

/**
 * Decodes and checks `image_base64`: base64 (optionally a data: URL), at most 8 MiB, JPEG or PNG.
 * `fieldPrefix` goes before the field's name in errors (`tasks[3].` in a batch).
 */
export function decodeImageBase64(value: string, fieldPrefix = ''): ImageUpload {
  const invalidImage = (problem: string) => invalidImageOf(problem, fieldPrefix);
  const compact = value.replace(DATA_URL, '').replace(/[\r\n]/g, '');
  if (compact.length === 0 || compact.length % 4 === 1 || !BASE64.test(compact)) {
    throw invalidImage('must be base64-encoded image data');
  }
  if (Math.floor((compact.length * 3) / 4) - 2 > MAX_IMAGE_BYTES) {
    throw invalidImage('must be an image of at most 8 MiB');
  }
  const data = Buffer.from(compact, 'base64');
  if (data.length > MAX_IMAGE_BYTES) throw invalidImage('must be an image of at most 8 MiB');
  if (data.length >= 8 && data.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) {
    return { contentType: 'image/png', data };
  }
  if (data.length >= 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) return { contentType: 'image/jpeg', data };
  throw invalidImage('must be a JPEG or PNG image');
}

/** The validated request, ready to store. */
export interface TaskDraft {
  kind: TaskKind;
  /** Kind parameters as stored in `tasks.input` (no image bytes). */
  input: Record<string, unknown>;
  /** `payload` source text, or null when absent. */
  payloadText: string | null;
  callbackUrl: string | null;
  upload: ImageUpload | null;
  /** Steering (docs/api.md, "Order, lifetime and fairness inside an account"): null when not given. */
  priority: number | null;
  ttlSeconds: number | null;
  fairnessKey: string | null;
}

/**
 * Builds a task draft from a parsed body and its raw text.
 * `payload` keeps its exact source text; a payload of JSON `null` is the same as none.
 * `fieldPrefix` goes before field names in errors (`tasks[3].` for an item of a batch).
 */
export function draftTask(kind: TaskKind, body: Record<string, unknown>, rawBody: string, fieldPrefix = ''): TaskDraft {
  const { callback_url, payload, priority, ttl_seconds, fairness_key, ...params } = body as {
    callback_url?: string | null;
    payload?: unknown;
    priority?: number | null;
    ttl_seconds?: number | null;
    fairness_key?: string | null;
    image_url?: string;
    image_base64?: string;
  };
  let payloadText: string | null = null;
  if (payload !== undefined && payload !== null) {
    payloadText = topLevelMemberText(rawBody, 'payload') ?? JSON.stringify(payload);
    if (Buffer.byteLength(payloadText) > MAX_PAYLOAD_BYTES) {
      throw new ApiError('INVALID_FIELD', { params: { name: `${fieldPrefix}payload`, problem: `must be at most ${MAX_PAYLOAD_BYTES} bytes of JSON` } });
    }
    if (jsonDepth(payloadText) > MAX_PAYLOAD_DEPTH) {
      throw new ApiError('INVALID_FIELD', { params: { name: `${fieldPrefix}payload`, problem: `must be nested at most ${MAX_PAYLOAD_DEPTH} levels deep` } });
    }
  }
  let upload: ImageUpload | null = null;
  let input: Record<string, unknown> = params;
  if (kind === 'face-detection' && typeof params.image_base64 === 'string') {
    upload = decodeImageBase64(params.image_base64, fieldPrefix);
    input = { image_upload: { content_type: upload.contentType, size: upload.data.length } };
  } else if (kind === 'face-detection') {
    input = { image_url: params.image_url };
  }
  return { kind, input, payloadText, callbackUrl: callback_url ?? null, upload, priority: priority ?? null, ttlSeconds: ttl_seconds ?? null, fairnessKey: fairness_key ?? null };
}
