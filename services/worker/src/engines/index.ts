import type { Config } from '@taskapi/config';
import { ModelWebhookTokens } from '@taskapi/crypto';
import type { PredictionRedis } from '@taskapi/domain';
import type { EgressClient } from '@taskapi/egress';
import { createBuiltinEngine, type Engine } from '@taskapi/engines';
import type { FileStore } from '@taskapi/file-store';
import type { Logger } from '@taskapi/logger';
import type { PubSubFanout } from '@taskapi/service';
import { TASK_KIND_CATALOG, type TaskKind } from '@taskapi/task-kinds';
import { abandonPrediction, createCogEngine } from './cog/cog-engine';
import { CogServer } from './cog/cog-server';
import { sentInputs } from './cog/input-check';

export interface Engines {
  engines: Partial<Record<TaskKind, Engine>>;
  /** The Cog model server of each kind that runs on one. */
  cogServers: Partial<Record<TaskKind, CogServer>>;
  /** What each kind runs on, for the start-up log: `builtin`, `builtin (mp4)`/`builtin (gif)` for video, or `cog <origin>`. */
  description: Partial<Record<TaskKind, string>>;
  /** A task of `kind` ended without its run: its prediction, if it left one, is cancelled (see `abandonPrediction`). */
  abandon(kind: TaskKind, publicId: string): Promise<void>;
}

/** What the `cog` engine needs besides the configuration. */
export interface CogDependencies {
  redis: PredictionRedis;
  /** Wake-ups on PREDICTION_UPDATED_CHANNEL, by task (started only when a kind runs on Cog). */
  updates: () => Promise<PubSubFanout>;
  store: FileStore;
  egress: EgressClient;
  logger: Logger;
  /** Told when a model server's learned capacity changes. */
  onCapacity: (kind: TaskKind, capacity: number) => void;
}

/** The engine of each kind this process runs, as configured (`ENGINE_<KIND>=builtin|cog`). */
export async function createEngines(config: Config, kinds: readonly TaskKind[], cog: CogDependencies): Promise<Engines> {
  const engines: Partial<Record<TaskKind, Engine>> = {};
  const cogServers: Partial<Record<TaskKind, CogServer>> = {};
  const description: Partial<Record<TaskKind, string>> = {};
  const tokens = new ModelWebhookTokens(config.secretsKey);
  for (const kind of kinds) {
    const url = config.cog[kind].url;
    if (config.engines[kind] === 'cog' && url) {
      const server = new CogServer({
        url,
        // No more at once than the model runs (COG_MAX_CONCURRENCY_<KIND>), nor than this worker's slots.
        maxConcurrency: Math.min(config.workerConcurrency, config.cog[kind].maxConcurrency),
        busyRetryMs: config.cogBusyRetryMs,
        onCapacity: (n) => cog.onCapacity(kind, n),
        // The model's schema is checked against what this kind sends it before its first prediction.
        inputs: { sent: sentInputs(kind, config.cog[kind].inputMap), mapVariable: TASK_KIND_CATALOG[kind].engine.cogInputMap },
        logger: cog.logger,
      });
      cogServers[kind] = server;
      engines[kind] = createCogEngine({
        kind,
        server,
        redis: cog.redis,
        updates: await cog.updates(),
        store: cog.store,
        egress: cog.egress,
        tokens,
        webhookBaseUrl: config.cogWebhookBaseUrl,
        inputMap: config.cog[kind].inputMap,
        outputMaxBytes: config.cogOutputMaxBytes,
        logger: cog.logger,
      });
      description[kind] = `cog ${server.origin}`;
    } else {
      const builtin = createBuiltinEngine(kind, config);
      engines[kind] = builtin.engine;
      description[kind] = builtin.description;
    }
  }
  const abandon = async (kind: TaskKind, publicId: string) => {
    const server = cogServers[kind];
    if (server) await abandonPrediction({ server, redis: cog.redis, store: cog.store, logger: cog.logger }, publicId);
  };
  return { engines, cogServers, description, abandon };
}
