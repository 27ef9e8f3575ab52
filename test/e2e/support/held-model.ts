import { CogFile, startCogServer, tqdmLine, validateInput, waitFor, type CogModel, type CogServer, type CogServerOptions } from '@taskapi/testing';

/** A 1×1 GIF: a valid output for the image and the video kinds. */
export const TINY_GIF = Buffer.from('R0lGODlhAQABAIAAAP///wAAACH5BAEAAAAALAAAAAABAAEAAAICRAEAOw==', 'base64');

export interface HeldModel {
  model: CogModel;
  /** Whether prediction `id` is running and held. */
  holds(id: string): boolean;
  /** Lets prediction `id` finish (it must be held). */
  release(id: string): void;
}

/**
 * A Cog model that reports a quarter of its work (a tqdm line and a `progress` metric), then holds
 * each prediction until the test releases it (or it is cancelled), then returns `output()` (by
 * default a tiny GIF), so a test can act while a task runs on a model server.
 */
export function heldModel(opts: { streaming: boolean; output?: () => unknown }): HeldModel {
  const waiting = new Map<string, () => void>();
  const model: CogModel = {
    name: 'held',
    streaming: opts.streaming,
    inputSchema: {},
    validate: (input) => validateInput({}, input),
    async run(_input, { id, signal, log, metric }) {
      log(tqdmLine(1, 4, 10));
      metric('progress', 0.25);
      await new Promise<void>((resolve, reject) => {
        waiting.set(id, resolve);
        signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true });
      });
      log(tqdmLine(4, 4, 40));
      return opts.output ? opts.output() : new CogFile('out.gif', 'image/gif', TINY_GIF);
    },
  };
  return {
    model,
    holds: (id) => waiting.has(id),
    release(id) {
      const resolve = waiting.get(id);
      if (!resolve) throw new Error(`prediction ${id} is not held`);
      waiting.delete(id);
      resolve();
    },
  };
}

/** A Cog test server running a held model, in this process (the workers under test may be children). */
export interface HeldCogServer extends CogServer {
  held: HeldModel;
  /** Waits until prediction `id` runs and is held. */
  waitForHeld(id: string): Promise<void>;
}

export async function startHeldCogServer(opts: { streaming?: boolean } & Omit<CogServerOptions, 'model'> = {}): Promise<HeldCogServer> {
  const held = heldModel({ streaming: opts.streaming ?? true });
  const server = await startCogServer({ ...opts, model: held.model });
  return Object.assign(server, {
    held,
    waitForHeld: (id: string) => waitFor(() => held.holds(id), { timeoutMs: 30_000, what: `prediction ${id} to run` }).then(() => undefined),
  });
}
