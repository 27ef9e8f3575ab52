import { validateInput } from '../input-schema';
import type { CogModel } from '../model';

/** Options of {@link failModel}. */
export interface FailModelOptions {
  /** The prediction's `error`. Default `CUDA out of memory.` */
  failMessage?: string;
}

/** `fail`: every prediction fails (after a line of logs), as a model that raises does. */
export function failModel(opts: FailModelOptions = {}): CogModel {
  return {
    name: 'fail',
    streaming: false,
    inputSchema: {},
    validate: (input) => validateInput({}, input),
    async run(_input, { log }) {
      log('Loading pipeline components...');
      throw new Error(opts.failMessage ?? 'CUDA out of memory.');
    },
  };
}
