// The video model of the chaos run, behind the suite's Cog test server (in this process: the chaos
// kills the services, not the model server). It answers in 100-800 ms, as a model would, so a
// killed worker leaves predictions mid-run, with a tiny GIF, so videos cost no CPU; the load
// chooses each task's fate through its prompt: "…[fail]" ends its prediction `failed` (the task
// fails with engine_error and is refunded, not retried), "…[flaky]" has its first prediction
// `canceled` on the model server (the worker retries the task) and succeeds on the next.
import { setTimeout as delay } from 'node:timers/promises';
import { CogFile, startCogServer, tqdmLine, validateInput, type CogModel, type CogServer, type InputSchema } from '@taskapi/testing';

export const FAIL_MARK = '[fail]';
export const FLAKY_MARK = '[flaky]';

/** The error of a `[fail]` prediction: a plain sentence, so it becomes the task's `error_message`. */
export const FAIL_MESSAGE = 'The chaos run asked for this task to fail.';

const TINY_GIF = Buffer.from('R0lGODlhAQABAIAAAAAAAP///yH5BAEAAAAALAAAAAABAAEAAAIBRAA7', 'base64');

// The video kind's model inputs (packages/task-kinds), as the `video` test model declares them.
const INPUT = {
  prompt: { type: 'string', required: true, description: 'What the clip shows' },
  duration_seconds: { type: 'integer', minimum: 1, maximum: 10, default: 4, description: 'Length in seconds' },
} satisfies InputSchema;

/**
 * The model. `cancel` cancels a prediction on its own server (`POST /predictions/{id}/cancel`),
 * as an operator would: the prediction then ends `canceled`, which the worker retries.
 */
function chaosVideoModel(cancel: (id: string) => Promise<void>): CogModel {
  // Prompts whose first prediction was cancelled: each chaos task's prompt is its own.
  const flaked = new Set<string>();
  return {
    name: 'chaos-video',
    streaming: true,
    inputSchema: INPUT,
    validate: (input) => validateInput(INPUT, input),
    async run(input, { id, signal, log }) {
      const prompt = input.prompt as string;
      const ms = 100 + Math.random() * 700;
      await delay(ms / 2, undefined, { signal });
      log(tqdmLine(1, 2, ms / 2));
      await delay(ms / 2, undefined, { signal });
      if (prompt.includes(FAIL_MARK)) throw new Error(FAIL_MESSAGE);
      if (prompt.includes(FLAKY_MARK) && !flaked.has(prompt)) {
        flaked.add(prompt);
        await cancel(id);
        // The cancel aborted `signal`: this rejection ends the prediction `canceled`, not `failed`.
        signal.throwIfAborted();
        throw new Error(`cancelling flaky prediction ${id} did not take`);
      }
      return new CogFile('video.gif', 'image/gif', TINY_GIF);
    },
  };
}

/**
 * Starts the chaos run's model server with `concurrency` prediction slots. Give it at least the
 * workers' total concurrency for the kind, so a 409 (busy) is not what the chaos measures.
 */
export async function startModelServer(concurrency: number): Promise<CogServer> {
  // The model needs its server's URL, known once the server listens (before any prediction).
  const own = { url: '' };
  const cancel = async (id: string): Promise<void> => {
    const res = await fetch(`${own.url}/predictions/${encodeURIComponent(id)}/cancel`, { method: 'POST', signal: AbortSignal.timeout(5_000) });
    await res.body?.cancel();
    if (res.status !== 200) throw new Error(`cancelling prediction ${id} answered ${res.status}`);
  };
  const server = await startCogServer({ model: chaosVideoModel(cancel), concurrency });
  own.url = server.url;
  return server;
}
