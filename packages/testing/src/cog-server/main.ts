// The Cog test server as a process, like a model container:
//   node --import tsx packages/testing/src/cog-server/main.ts --model image --port 5000
// Prints one line, `cog server listening on http://127.0.0.1:<port>`, once it answers. SIGTERM
// stops it at once: nothing in flight is finished and no webhook is sent (a killed container).
// (coglet itself drains gracefully on SIGTERM; this stands in for the container being killed.)
import { parseArgs } from 'node:util';
import { isModelName, MODEL_NAMES } from './models';
import { startCogServer, type CogServerOptions } from './server';

const USAGE = `usage: main.ts --model ${MODEL_NAMES.join('|')} [--port N] [--host 127.0.0.1] [--concurrency N] [--setup-ms N]
  [--output-as data-url|url] [--streaming true|false] [--history-capacity N] [--fail-message TEXT] [--face-output boxes|face_coordinates]`;

function fail(message: string): never {
  process.stderr.write(`${message}\n${USAGE}\n`);
  process.exit(2);
}

function integer(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 0) fail(`--${name} must be a whole number, not ${JSON.stringify(value)}`);
  return n;
}

function oneOf<T extends string>(name: string, value: string | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) fail(`--${name} must be one of ${allowed.join(', ')}`);
  return value as T;
}

function options(): CogServerOptions {
  let values: Record<string, string | undefined>;
  try {
    ({ values } = parseArgs({
      options: Object.fromEntries(
        ['model', 'port', 'host', 'concurrency', 'setup-ms', 'output-as', 'streaming', 'history-capacity', 'fail-message', 'face-output'].map((name) => [
          name,
          { type: 'string' },
        ]),
      ) as Record<string, { type: 'string' }>,
    }));
  } catch (err) {
    fail((err as Error).message);
  }
  const model = values.model;
  if (model === undefined || !isModelName(model)) fail(`--model must be one of ${MODEL_NAMES.join(', ')}`);
  const concurrency = integer('concurrency', values.concurrency);
  if (concurrency === 0) fail('--concurrency must be at least 1');
  const streaming = oneOf('streaming', values.streaming, ['true', 'false'] as const);
  return {
    model,
    port: integer('port', values.port) ?? 0,
    host: values.host ?? '127.0.0.1',
    concurrency,
    setupMs: integer('setup-ms', values['setup-ms']),
    outputAs: oneOf('output-as', values['output-as'], ['data-url', 'url'] as const),
    streaming: streaming === undefined ? undefined : streaming === 'true',
    historyCapacity: integer('history-capacity', values['history-capacity']),
    failMessage: values['fail-message'],
    faceOutput: oneOf('face-output', values['face-output'], ['boxes', 'face_coordinates'] as const),
  };
}

async function main(): Promise<void> {
  const opts = options();
  // The name spawnCogServer records it under, so a killed test run's servers are found and ended.
  process.title = 'cog-server';
  const server = await startCogServer(opts);
  for (const signal of ['SIGTERM', 'SIGINT'] as const) process.once(signal, () => process.exit(0));
  void server.closed.then(() => process.exit(0)); // POST /shutdown
  process.stdout.write(`cog server listening on ${server.url}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`cog server failed to start: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
