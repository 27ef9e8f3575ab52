// What a kind's task keeps of a Cog prediction's output (docs/models.md): files (`data:` URLs, or
// http(s) URLs fetched under the egress rules, the model server's own host allowed; one or a list)
// stored as `image.<ext>` / `video.<ext>` (`output-<n>.<ext>` when there are several), their size
// capped and their content type checked; face boxes as `{"face_coordinates": [...]}`.
import { request } from 'undici';
import { EgressError, type EgressClient } from '@taskapi/egress';
import { MAX_PREDICTION_OUTPUT_FILES } from '@taskapi/domain';
import { EngineError, type EngineFile, type EngineOutput } from '@taskapi/engines';
import type { TaskKind } from '@taskapi/task-kinds';

/** How one kind's output is read. */
type KindOutput = { files: { base: string; types: Readonly<Record<string, string>> } } | { faces: true };

const IMAGE_TYPES = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp', 'image/gif': 'gif' };
const VIDEO_TYPES = { 'video/mp4': 'mp4', 'video/webm': 'webm', 'video/quicktime': 'mov', 'image/gif': 'gif' };

/** Per kind; a kind missing here fails to compile. */
const COG_OUTPUTS = {
  'video-generation': { files: { base: 'video', types: VIDEO_TYPES } },
  'image-generation': { files: { base: 'image', types: IMAGE_TYPES } },
  'face-detection': { faces: true },
} satisfies Record<TaskKind, KindOutput>;

/** A prediction's outputs the model returned in a way we cannot keep: the task fails with `engine_error`. */
function badOutput(why: string): EngineError {
  return new EngineError(`unusable model output: ${why}`, false, `The model returned an output that could not be used: ${why}.`);
}

export interface OutputDeps {
  egress: EgressClient;
  /** The model server's origin: URL outputs there are fetched even on a private network. */
  modelOrigin: string;
  maxBytes: number;
  signal: AbortSignal;
}

/** The task's result and files from a succeeded prediction's `output` and `metrics`. */
export async function taskOutput(kind: TaskKind, output: unknown, metrics: unknown, deps: OutputDeps): Promise<EngineOutput> {
  const shape: KindOutput = COG_OUTPUTS[kind];
  if ('faces' in shape) return { result: { face_coordinates: faceBoxes(output) } };
  const values = Array.isArray(output) ? output : [output];
  if (values.length === 0 || values.length > MAX_PREDICTION_OUTPUT_FILES || !values.every((v): v is string => typeof v === 'string')) {
    throw badOutput('expected a file (a data: or http(s) URL) or a list of them');
  }
  const files: EngineFile[] = [];
  for (const [i, value] of values.entries()) {
    const { contentType, data } = await fileBytes(value, deps);
    const ext = shape.files.types[contentType];
    if (!ext) throw badOutput(`a file of type ${contentType.replace(/[^\w./+-]/g, '')} is not a ${shape.files.base}`);
    files.push({ name: values.length === 1 ? `${shape.files.base}.${ext}` : `output-${i + 1}.${ext}`, contentType, data });
  }
  const result = typeof metrics === 'object' && metrics !== null && !Array.isArray(metrics) ? { metrics } : null;
  return { result, files };
}

/** Face boxes from `{"face_coordinates": [...]}` or a bare list; each needs numeric x, y, width and height. */
function faceBoxes(output: unknown): Array<Record<string, number>> {
  const list = Array.isArray(output) ? output : (output as { face_coordinates?: unknown } | null)?.face_coordinates;
  if (!Array.isArray(list) || list.length > 10_000) throw badOutput('expected a list of face boxes');
  return list.map((box: unknown) => {
    const b = box as Record<string, unknown> | null;
    const num = (k: string) => (typeof b?.[k] === 'number' && Number.isFinite(b[k]) ? (b[k] as number) : undefined);
    const [x, y, width, height, score] = [num('x'), num('y'), num('width'), num('height'), num('score')];
    if (x === undefined || y === undefined || width === undefined || height === undefined) throw badOutput('a face box needs numbers x, y, width and height');
    const face: Record<string, number> = { x, y, width, height };
    if (score !== undefined) face.score = score;
    return face;
  });
}

/** The bytes and type of one file output: a `data:` URL decoded, or a URL fetched. */
async function fileBytes(value: string, deps: OutputDeps): Promise<{ contentType: string; data: Buffer }> {
  if (value.startsWith('data:')) return dataUrl(value, deps.maxBytes);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw badOutput('a file is neither a data: URL nor an http(s) URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw badOutput('a file is neither a data: URL nor an http(s) URL');
  return url.origin === deps.modelOrigin ? fetchFromModelServer(url, deps) : fetchElsewhere(url, deps);
}

/** `data:[<type>][;base64],<data>`; the size is checked before decoding. */
function dataUrl(value: string, maxBytes: number): { contentType: string; data: Buffer } {
  const comma = value.indexOf(',');
  const meta = comma > 5 ? value.slice(5, comma).toLowerCase() : '';
  if (comma < 0 || !meta.endsWith(';base64')) throw badOutput('a data: URL file must be base64');
  const contentType = meta.slice(0, -';base64'.length).split(';')[0]!.trim();
  if (Math.floor(((value.length - comma - 1) * 3) / 4) > maxBytes) throw badOutput(`a file is larger than ${maxBytes} bytes`);
  const data = Buffer.from(value.slice(comma + 1), 'base64');
  if (data.length === 0) throw badOutput('a file is empty');
  return { contentType, data };
}

/** The model server's own files (its host is the operator's, so private addresses are fine), capped. */
async function fetchFromModelServer(url: URL, deps: OutputDeps): Promise<{ contentType: string; data: Buffer }> {
  let res;
  try {
    res = await request(url, { method: 'GET', maxRedirections: 0, headersTimeout: 30_000, bodyTimeout: 60_000, signal: deps.signal } as Parameters<typeof request>[1]);
  } catch (err) {
    if (deps.signal.aborted) throw deps.signal.reason as Error;
    throw new EngineError(`could not fetch a model output: ${(err as Error).message}`, true);
  }
  if (res.statusCode !== 200) {
    await res.body.dump();
    throw new EngineError(`a model output answered ${res.statusCode}`, res.statusCode >= 500);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res.body) {
    size += (chunk as Buffer).length;
    if (size > deps.maxBytes) {
      res.body.destroy();
      throw badOutput(`a file is larger than ${deps.maxBytes} bytes`);
    }
    chunks.push(chunk as Buffer);
  }
  return { contentType: mediaType(res.headers['content-type']), data: Buffer.concat(chunks) };
}

/** A file elsewhere (an upload bucket): public addresses only, as every fetch of a URL we did not configure. */
async function fetchElsewhere(url: URL, deps: OutputDeps): Promise<{ contentType: string; data: Buffer }> {
  let res;
  try {
    res = await deps.egress.request({ method: 'GET', url: url.toString(), timeoutMs: 60_000, maxResponseBytes: deps.maxBytes, signal: deps.signal });
  } catch (err) {
    if (deps.signal.aborted) throw deps.signal.reason as Error;
    // A destination we may not reach (private, not https) never becomes reachable: not retried.
    const permanent = err instanceof EgressError && (err.code === 'invalid_url' || err.code === 'blocked_destination');
    if (permanent) throw badOutput(`a file URL may not be fetched (${err.code.replace('_', ' ')})`);
    throw new EngineError(`could not fetch a model output: ${(err as Error).message}`, true);
  }
  if (res.truncated) throw badOutput(`a file is larger than ${deps.maxBytes} bytes`);
  if (res.status !== 200) throw new EngineError(`a model output answered ${res.status}`, res.status >= 500);
  return { contentType: mediaType(res.headers['content-type']), data: res.body };
}

function mediaType(header: string | string[] | undefined): string {
  const value = Array.isArray(header) ? header[0] : header;
  return (value ?? 'application/octet-stream').split(';')[0]!.trim().toLowerCase();
}
