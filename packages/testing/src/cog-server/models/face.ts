import type { Engine, EngineImage, FaceBox } from '@taskapi/engines';
import { validateInput, type InputSchema } from '../input-schema';
import type { CogModel } from '../model';

const INPUT = {
  image: { type: 'string', format: 'uri', required: true, description: 'The photo: a data: URL or an http(s) URL' },
} satisfies InputSchema;

/** Options of {@link faceModel}. */
export interface FaceModelOptions {
  /** `boxes` (default): a bare list `[{x, y, width, height, score}]`; `face_coordinates`: `{face_coordinates: [...]}`. */
  faceOutput?: 'boxes' | 'face_coordinates';
}

const DATA_URL = /^data:([^;,]*)((?:;[^;,]*)*?)(;base64)?,(.*)$/s;

/** A `Path` input as Cog takes one: a data: URL decoded, an http(s) URL downloaded. */
async function readImage(url: string, signal: AbortSignal): Promise<EngineImage> {
  const data = DATA_URL.exec(url);
  if (data) {
    const [, contentType = '', , base64, body = ''] = data;
    return { contentType: contentType || 'text/plain', data: base64 ? Buffer.from(body, 'base64') : Buffer.from(decodeURIComponent(body), 'latin1') };
  }
  if (!/^https?:\/\//i.test(url)) throw new Error(`image must be a data: or http(s) URL, not ${JSON.stringify(url.slice(0, 40))}`);
  const res = await fetch(url, { signal: AbortSignal.any([signal, AbortSignal.timeout(30_000)]) });
  if (!res.ok) throw new Error(`fetching the image failed: ${res.status} ${res.statusText}`);
  return { contentType: res.headers.get('content-type') ?? 'application/octet-stream', data: Buffer.from(await res.arrayBuffer()) };
}

/** `face`: our built-in face detector behind Cog; `{image}` → the faces' boxes in pixels. */
export function faceModel(opts: FaceModelOptions = {}): CogModel {
  let engine: Promise<Engine> | undefined;
  return {
    name: 'face',
    streaming: false,
    inputSchema: INPUT,
    validate: (input) => validateInput(INPUT, input),
    async run(input, { id, signal }) {
      engine ??= import('@taskapi/engines').then(({ createFaceDetectionEngine }) => createFaceDetectionEngine());
      const image = await readImage(input.image as string, signal);
      const out = await (await engine).run({ kind: 'face-detection', publicId: id, params: {}, image }, signal);
      const boxes = (out.result as { face_coordinates: FaceBox[] }).face_coordinates;
      return opts.faceOutput === 'face_coordinates' ? { face_coordinates: boxes } : boxes;
    },
  };
}
