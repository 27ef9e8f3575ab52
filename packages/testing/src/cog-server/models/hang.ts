import { validateInput } from '../input-schema';
import type { CogModel } from '../model';

/** `hang`: never finishes; only a cancel ends it. */
export function hangModel(): CogModel {
  return {
    name: 'hang',
    streaming: true,
    inputSchema: {},
    validate: (input) => validateInput({}, input),
    run: (_input, { signal }) =>
      new Promise((_resolve, reject) => {
        if (signal.aborted) return reject(signal.reason as Error);
        signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
      }),
  };
}
