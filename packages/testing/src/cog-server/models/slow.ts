import { setTimeout as sleep } from 'node:timers/promises';
import { validateInput, withDefaults, type InputSchema } from '../input-schema';
import type { CogModel } from '../model';
import { tqdmLine } from '../tqdm';

const INPUT = {
  steps: { type: 'integer', minimum: 1, maximum: 100_000, default: 10, description: 'Steps to take' },
  step_ms: { type: 'integer', minimum: 0, maximum: 600_000, default: 100, description: 'Milliseconds per step' },
} satisfies InputSchema;

/** `slow`: `steps` steps of `step_ms` each, a tqdm line per step; stops at once when cancelled. Output `{"steps": n}`. */
export function slowModel(): CogModel {
  return {
    name: 'slow',
    streaming: true,
    inputSchema: INPUT,
    validate: (input) => validateInput(INPUT, input),
    async run(input, { signal, log }) {
      const { steps, step_ms: stepMs } = withDefaults(INPUT, input) as { steps: number; step_ms: number };
      const started = performance.now();
      for (let i = 1; i <= steps; i++) {
        await sleep(stepMs, undefined, { signal });
        log(tqdmLine(i, steps, performance.now() - started));
      }
      return { steps };
    },
  };
}
