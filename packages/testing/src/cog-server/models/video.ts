import type { Engine } from '@taskapi/engines';
import { validateInput, withDefaults, type InputSchema } from '../input-schema';
import type { CogModel } from '../model';
import { tqdmLine } from '../tqdm';
import { onlyFile } from './image';

const INPUT = {
  prompt: { type: 'string', required: true, description: 'What the clip shows' },
  duration_seconds: { type: 'integer', minimum: 1, maximum: 10, default: 4, description: 'Length in seconds' },
} satisfies InputSchema;

// The built-in engine's frame rates (packages/engines/src/video-generation.ts), for the `i/N` of the progress lines.
const FPS = { mp4: 24, gif: 10 } as const;

/** Options of {@link videoModel}. */
export interface VideoModelOptions {
  /** The ffmpeg to encode mp4 with; without one that encodes H.264 the clip is a gif. Default `ffmpeg`. */
  ffmpegPath?: string;
}

/**
 * `video`: our built-in video engine behind Cog; `{prompt, duration_seconds}` → an mp4 (gif
 * without ffmpeg). Progress as a GPU model reports it: a tqdm line per frame in the logs, and a
 * `progress` metric from 0 to 1.
 */
export function videoModel(opts: VideoModelOptions = {}): CogModel {
  let engine: Promise<{ engine: Engine; format: keyof typeof FPS }> | undefined;
  const load = () =>
    (engine ??= import('@taskapi/engines').then(({ createVideoGenerationEngine, ffmpegCanEncodeH264 }) => {
      const ffmpegPath = opts.ffmpegPath ?? 'ffmpeg';
      const format = ffmpegCanEncodeH264(ffmpegPath) ? 'mp4' : 'gif';
      return { engine: createVideoGenerationEngine({ format, ffmpegPath }), format };
    }));
  return {
    name: 'video',
    streaming: true,
    inputSchema: INPUT,
    validate: (input) => validateInput(INPUT, input),
    async run(input, { id, signal, log, metric }) {
      const { engine, format } = await load();
      const params = withDefaults(INPUT, input);
      const total = (params.duration_seconds as number) * FPS[format];
      const started = performance.now();
      const report = (fraction: number): void => {
        log(tqdmLine(Math.round(fraction * total), total, performance.now() - started));
        metric('progress', fraction, 'replace');
      };
      const out = await engine.run({ kind: 'video-generation', publicId: id, params, progress: report }, signal);
      report(1); // tqdm's closing line; the mp4 encoder reports frames rendered, not the last one encoded
      return onlyFile(out, 'video');
    },
  };
}
