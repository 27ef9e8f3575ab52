import type { EngineOutput } from '@taskapi/engines';
import { validateInput, withDefaults, type InputSchema } from '../input-schema';
import { CogFile, type CogModel } from '../model';

const INPUT = {
  prompt: { type: 'string', required: true, description: 'What to draw' },
  width: { type: 'integer', minimum: 64, maximum: 1024, default: 512, description: 'Width in pixels' },
  height: { type: 'integer', minimum: 64, maximum: 1024, default: 512, description: 'Height in pixels' },
} satisfies InputSchema;

/** The engine's one file as the model's output. */
export function onlyFile(out: EngineOutput, what: string): CogFile {
  const file = out.files?.[0];
  if (!file) throw new Error(`the ${what} engine returned no file`);
  return new CogFile(file.name, file.contentType, file.data);
}

/** `image`: our built-in image engine behind Cog; `{prompt, width, height}` → a PNG. */
export function imageModel(): CogModel {
  return {
    name: 'image',
    streaming: false,
    inputSchema: INPUT,
    validate: (input) => validateInput(INPUT, input),
    async run(input, { id, signal }) {
      // Loaded on first use: the engines pull in TensorFlow, which a test importing @taskapi/testing need not load.
      const { createImageGenerationEngine } = await import('@taskapi/engines');
      const out = await createImageGenerationEngine().run({ kind: 'image-generation', publicId: id, params: withDefaults(INPUT, input) }, signal);
      return onlyFile(out, 'image');
    },
  };
}
