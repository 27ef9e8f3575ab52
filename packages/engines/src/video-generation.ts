import { GIFEncoder, applyPalette, quantize } from 'gifenc';
import type { Engine } from './engine';
import { TaskInputError } from './engine';
import { encodeMp4 } from './ffmpeg-mp4';
import { promptScene, yieldToEventLoop, type PromptScene } from './prompt-art';

/** `mp4`: H.264 through the system ffmpeg; `gif`: an animated GIF written in-process. */
export type VideoFormat = 'mp4' | 'gif';

const GIF = { width: 320, height: 180, fps: 10 };
const MP4 = { width: 640, height: 360, fps: 24 };

async function renderGif(scene: PromptScene, seconds: number, signal: AbortSignal, progress?: (fraction: number) => void): Promise<Buffer> {
  const { width, height, fps } = GIF;
  const frames = seconds * fps;
  const rgba = new Uint8Array(width * height * 4);
  const gif = GIFEncoder();
  // One palette for the whole clip (from the first frame): stable colours, and quantizing once is cheaper.
  scene.render(width, height, 0, rgba);
  const palette = quantize(rgba, 256);
  for (let i = 0; i < frames; i++) {
    if (i > 0) scene.render(width, height, i / frames, rgba);
    gif.writeFrame(applyPalette(rgba, palette), width, height, { palette: i === 0 ? palette : undefined, delay: 1000 / fps, repeat: 0 });
    progress?.((i + 1) / frames);
    await yieldToEventLoop(signal);
  }
  gif.finish();
  return Buffer.from(gif.bytes());
}

/**
 * Built-in video generation: a clip of exactly the requested duration, animated from the prompt.
 * `mp4` (640×360, 24 fps, H.264 through the system ffmpeg) or `gif` (320×180, 10 fps, looping;
 * needs nothing on the machine and plays in every browser).
 */
export function createVideoGenerationEngine(opts: { format: VideoFormat; ffmpegPath?: string } = { format: 'gif' }): Engine {
  return {
    async run({ params, progress }, signal) {
      const { prompt, duration_seconds: seconds } = params as { prompt?: unknown; duration_seconds?: unknown };
      if (typeof prompt !== 'string' || !Number.isInteger(seconds) || (seconds as number) < 1) {
        throw new TaskInputError('prompt and duration_seconds are required');
      }
      const duration = seconds as number;
      const scene = promptScene(prompt);
      if (opts.format === 'gif') {
        const data = await renderGif(scene, duration, signal, progress);
        return {
          result: { width: GIF.width, height: GIF.height, duration_seconds: duration, frames: duration * GIF.fps, fps: GIF.fps, format: 'gif' },
          files: [{ name: 'video.gif', contentType: 'image/gif', data }],
        };
      }
      const frames = duration * MP4.fps;
      const data = await encodeMp4({
        command: opts.ffmpegPath ?? 'ffmpeg',
        ...MP4,
        frames,
        renderFrame: (i, out) => {
          scene.render(MP4.width, MP4.height, i / frames, out);
          // Frames rendered so far; encoding the last ones takes ffmpeg a moment more.
          progress?.(i / frames);
        },
        signal,
      });
      return {
        result: { width: MP4.width, height: MP4.height, duration_seconds: duration, frames, fps: MP4.fps, format: 'mp4' },
        files: [{ name: 'video.mp4', contentType: 'video/mp4', data }],
      };
    },
  };
}
