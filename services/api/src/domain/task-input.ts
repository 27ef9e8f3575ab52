import { z } from 'zod';
import type { TaskKind } from '@taskapi/domain';
import { ApiError } from '../errors';
import { jsonDepth, topLevelMemberText } from './json-member-text';

/** Largest decoded `image_base64` (8 MiB). */
export const MAX_IMAGE_BYTES = 8 * 1024 * 1024;
/** Largest `payload`, as minified JSON text. */
export const MAX_PAYLOAD_BYTES = 64 * 1024;
/** Deepest nesting of arrays/objects in `payload`. */
export const MAX_PAYLOAD_DEPTH = 64;
export const MAX_URL_LENGTH = 2048;

function isHttpsUrl(value: string): boolean {
  if (!value.startsWith('https://')) return false;
  try {
    const url = new URL(value);
    return url.protocol === 'https:' && url.hostname.length > 0;
  } catch {
    return false;
  }
}

const httpsUrl = z
  .string({ error: 'must be a string' })
  .max(MAX_URL_LENGTH, { error: `must be at most ${MAX_URL_LENGTH} characters` })
  .refine(isHttpsUrl, { error: 'must be an https:// URL' });

const prompt = z
  .string({ error: 'must be a string' })
  .refine((s) => s.trim().length > 0, { error: 'must not be empty' })
  .refine((s) => [...s].length <= 2000, { error: 'must be at most 2000 characters' });

const intInRange = (min: number, max: number) =>
  z
    .number({ error: `must be an integer from ${min} to ${max}` })
    .int({ error: `must be an integer from ${min} to ${max}` })
    .min(min, { error: `must be an integer from ${min} to ${max}` })
    .max(max, { error: `must be an integer from ${min} to ${max}` });

const common = {
  callback_url: httpsUrl.nullish(),
  // Any JSON value; the stored form is the source text (see json-member-text.ts).
  payload: z.unknown().optional(),
};

const bodyError = { error: 'must be a JSON object' };

export const createTaskSchemas = {
  'video-generation': z.strictObject(
    { prompt, duration_seconds: intInRange(1, 10).default(4), ...common },
    bodyError,
  ),
  'image-generation': z.strictObject(
    { prompt, width: intInRange(64, 1024).default(512), height: intInRange(64, 1024).default(512), ...common },
    bodyError,
  ),
  'face-detection': z
    .strictObject(
      {
        image_url: httpsUrl.optional(),
        image_base64: z.string({ error: 'must be a string of base64' }).optional(),
        ...common,
      },
      bodyError,
    )
    .refine((b) => (b.image_url === undefined) !== (b.image_base64 === undefined), {
      error: 'exactly one of image_url or image_base64 is required',
      path: ['image_url'],
    }),
} satisfies Record<TaskKind, z.ZodType>;

export interface ImageUpload {
  contentType: 'image/png' | 'image/jpeg';
  data: Buffer;
}

const invalidImage = (problem: string) => new ApiError('INVALID_FIELD', { params: { name: 'image_base64', problem } });

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const DATA_URL = /^data:image\/(?:png|jpeg|jpg);base64,/i;

/** Decodes and checks `image_base64`: base64 (optionally a data: URL), at most 8 MiB, JPEG or PNG. */
export function decodeImageBase64(value: string): ImageUpload {
  const compact = value.replace(DATA_URL, '').replace(/[\r\n]/g, '');
  if (compact.length === 0 || compact.length % 4 === 1 || !BASE64.test(compact)) {
    throw invalidImage('must be base64-encoded image data');
  }
  if (Math.floor((compact.length * 3) / 4) - 2 > MAX_IMAGE_BYTES) {
    throw invalidImage('the image must be at most 8 MiB');
  }
  const data = Buffer.from(compact, 'base64');
  if (data.length > MAX_IMAGE_BYTES) throw invalidImage('the image must be at most 8 MiB');
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
}

/**
 * Builds a task draft from a parsed body and its raw text.
 * `payload` keeps its exact source text; a payload of JSON `null` is the same as none.
 */
export function draftTask(kind: TaskKind, body: Record<string, unknown>, rawBody: string): TaskDraft {
  const { callback_url, payload, ...params } = body as {
    callback_url?: string | null;
    payload?: unknown;
    image_url?: string;
    image_base64?: string;
  };
  let payloadText: string | null = null;
  if (payload !== undefined && payload !== null) {
    payloadText = topLevelMemberText(rawBody, 'payload') ?? JSON.stringify(payload);
    if (Buffer.byteLength(payloadText) > MAX_PAYLOAD_BYTES) {
      throw new ApiError('INVALID_FIELD', { params: { name: 'payload', problem: `must be at most ${MAX_PAYLOAD_BYTES} bytes of JSON` } });
    }
    if (jsonDepth(payloadText) > MAX_PAYLOAD_DEPTH) {
      throw new ApiError('INVALID_FIELD', { params: { name: 'payload', problem: `must be nested at most ${MAX_PAYLOAD_DEPTH} levels deep` } });
    }
  }
  let upload: ImageUpload | null = null;
  let input: Record<string, unknown> = params;
  if (kind === 'face-detection' && typeof params.image_base64 === 'string') {
    upload = decodeImageBase64(params.image_base64);
    input = { image_upload: { content_type: upload.contentType, size: upload.data.length } };
  } else if (kind === 'face-detection') {
    input = { image_url: params.image_url };
  }
  return { kind, input, payloadText, callbackUrl: callback_url ?? null, upload };
}
