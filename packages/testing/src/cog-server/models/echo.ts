import { setTimeout as sleep } from 'node:timers/promises';
import { validateInput, withDefaults, type InputSchema } from '../input-schema';
import type { CogModel } from '../model';

const INPUT = {
  delay_ms: { type: 'integer', minimum: 0, maximum: 600_000, default: 0, description: 'How long to take' },
  tag: { type: 'string', description: 'Anything, returned as it came (to tell predictions apart)' },
} satisfies InputSchema;

/** `echo`: waits `delay_ms`, then returns its input; for scheduling tests (when did each start, how many at once). */
export function echoModel(): CogModel {
  return {
    name: 'echo',
    streaming: false,
    inputSchema: INPUT,
    validate: (input) => validateInput(INPUT, input),
    async run(input, { signal }) {
      const params = withDefaults(INPUT, input);
      await sleep(params.delay_ms as number, undefined, { signal });
      return params;
    },
  };
}
