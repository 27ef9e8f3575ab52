import type { Engine } from './engine';
import { TaskInputError } from './engine';
import { encodePng } from './png';
import { promptScene, yieldToEventLoop } from './prompt-art';

/** Built-in image generation: a PNG of the requested size, rendered from the prompt (same prompt, same bytes). */
export function createImageGenerationEngine(): Engine {
  return {
    async run({ params, progress }, signal) {
      const { prompt, width, height } = params as { prompt?: unknown; width?: unknown; height?: unknown };
      if (typeof prompt !== 'string' || !Number.isInteger(width) || !Number.isInteger(height)) {
        throw new TaskInputError('prompt, width and height are required');
      }
      const w = width as number;
      const h = height as number;
      const pixels = new Uint8Array(w * h * 4);
      promptScene(prompt).render(w, h, 0, pixels);
      // Rendered; what is left is the PNG encoding.
      progress?.(0.5);
      await yieldToEventLoop(signal);
      const png = encodePng(w, h, pixels);
      return {
        result: { width: w, height: h },
        files: [{ name: 'image.png', contentType: 'image/png', data: png }],
      };
    },
  };
}
