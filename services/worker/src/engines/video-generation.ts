import { GIFEncoder, applyPalette, quantize } from 'gifenc';
import type { Engine } from './engine';
import { TaskInputError } from './engine';
import { promptScene, yieldToEventLoop } from './prompt-art';

const WIDTH = 320;
const HEIGHT = 180;
const FPS = 10;

/**
 * Built-in video generation: an animated GIF (320×180, 10 frames per second, looping) of exactly
 * the requested duration, animated from the prompt. GIF needs no codec on the machine; every
 * browser plays it.
 */
export function createVideoGenerationEngine(): Engine {
  return {
    async run({ params }, signal) {
      const { prompt, duration_seconds: seconds } = params as { prompt?: unknown; duration_seconds?: unknown };
      if (typeof prompt !== 'string' || !Number.isInteger(seconds) || (seconds as number) < 1) {
        throw new TaskInputError('prompt and duration_seconds are required');
      }
      const frames = (seconds as number) * FPS;
      const scene = promptScene(prompt);
      const rgba = new Uint8Array(WIDTH * HEIGHT * 4);
      const gif = GIFEncoder();
      // One palette for the whole clip (from the first frame): stable colours, and quantizing once is cheaper.
      scene.render(WIDTH, HEIGHT, 0, rgba);
      const palette = quantize(rgba, 256);
      for (let i = 0; i < frames; i++) {
        if (i > 0) scene.render(WIDTH, HEIGHT, i / frames, rgba);
        gif.writeFrame(applyPalette(rgba, palette), WIDTH, HEIGHT, { palette: i === 0 ? palette : undefined, delay: 1000 / FPS, repeat: 0 });
        await yieldToEventLoop(signal);
      }
      gif.finish();
      return {
        result: { width: WIDTH, height: HEIGHT, duration_seconds: seconds, frames, fps: FPS },
        files: [{ name: 'video.gif', contentType: 'image/gif', data: Buffer.from(gif.bytes()) }],
      };
    },
  };
}
