import { EgressError, type EgressClient, type EgressErrorCode } from '@taskapi/egress';
import { inputKey, type FileStore } from '@taskapi/file-store';
// The same limit as an uploaded `image_base64`.
import { MAX_IMAGE_BYTES } from '@taskapi/task-kinds';
import { ImageFetchError, TaskInputError, type EngineImage } from '@taskapi/engines';
import type { ClaimedTask } from '@taskapi/task-lifecycle';

export const IMAGE_FETCH_TIMEOUT_MS = 15_000;

/** Each egress failure in the words of the task's `error_message` (never the host's internals). */
const FETCH_REASONS: Record<EgressErrorCode, string> = {
  invalid_url: 'it is not a valid https:// URL',
  blocked_destination: 'the host resolves to a private address (not allowed)',
  dns_failure: 'its host name could not be resolved',
  connect_failure: 'the connection to its host failed',
  tls_failure: "its host's TLS certificate could not be verified",
  timeout: `the server did not answer within ${IMAGE_FETCH_TIMEOUT_MS / 1000} s`,
  aborted: 'the request was interrupted',
  protocol_error: 'the server sent an invalid HTTP response',
};

function sniff(data: Buffer): 'image/png' | 'image/jpeg' | null {
  if (data.length >= 8 && data.readUInt32BE(0) === 0x89504e47 && data.readUInt32BE(4) === 0x0d0a1a0a) return 'image/png';
  if (data.length >= 3 && data[0] === 0xff && data[1] === 0xd8 && data[2] === 0xff) return 'image/jpeg';
  return null;
}

/**
 * The face-detection input: the uploaded bytes, or `image_url` fetched under the same egress rules
 * as webhooks (https only, public addresses only, no redirects, TLS verified), at most 8 MiB and
 * 15 s.
 */
export async function loadInputImage(
  task: ClaimedTask,
  deps: { egress: EgressClient; store: FileStore },
  signal: AbortSignal,
): Promise<EngineImage> {
  const { egress } = deps;
  if (task.upload && 'data' in task.upload) return task.upload;
  if (task.upload) return { contentType: task.upload.contentType, data: await readStoredInput(deps.store, task.public_id, signal) };
  const url = task.params.image_url;
  if (typeof url !== 'string') throw new TaskInputError('the task has no image');
  let res;
  try {
    res = await egress.request({
      method: 'GET',
      url,
      headers: { accept: 'image/png, image/jpeg' },
      timeoutMs: IMAGE_FETCH_TIMEOUT_MS,
      maxResponseBytes: MAX_IMAGE_BYTES,
      signal,
    });
  } catch (err) {
    if (signal.aborted) throw signal.reason as Error;
    if (err instanceof EgressError) throw new ImageFetchError(`image_url: ${err.message}`, FETCH_REASONS[err.code]);
    throw err;
  }
  if (res.status !== 200) throw new ImageFetchError(`image_url answered HTTP ${res.status}`, `the server answered ${res.status}`);
  if (res.truncated) throw new ImageFetchError('image_url: the image is larger than 8 MiB', 'it is larger than 8 MiB');
  const contentType = sniff(res.body);
  if (!contentType) throw new TaskInputError('the image at image_url is not a JPEG or PNG');
  return { contentType, data: res.body };
}

/**
 * An uploaded image from the file store (at most 8 MiB, checked at upload). An unreachable store
 * throws `StorageUnavailableError`: the attempt is retried (see task-failure.ts), the file is not lost.
 */
async function readStoredInput(store: FileStore, publicId: string, signal: AbortSignal): Promise<Buffer> {
  const object = await store.get(inputKey(publicId));
  if (!object) throw new TaskInputError('the uploaded image is no longer stored');
  const chunks: Buffer[] = [];
  for await (const chunk of object.body) {
    if (signal.aborted) {
      object.body.destroy();
      throw signal.reason as Error;
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}
