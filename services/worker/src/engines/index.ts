import type { Config } from '@taskapi/config';
import type { TaskKind } from '@taskapi/domain';
import type { Engine } from './engine';
import { createFaceDetectionEngine } from './face-detection';
import { createHttpEngine } from './http-engine';
import { createImageGenerationEngine } from './image-generation';
import { createVideoGenerationEngine } from './video-generation';

/** The engine of each kind this process runs, as configured (`ENGINE_<KIND>=builtin|http`). */
export function createEngines(config: Config, kinds: readonly TaskKind[]): Partial<Record<TaskKind, Engine>> {
  const engines: Partial<Record<TaskKind, Engine>> = {};
  for (const kind of kinds) {
    if (config.engines[kind] === 'http') {
      if (!config.httpEngine) throw new Error('HTTP_ENGINE_URL is required for the http engine');
      engines[kind] = createHttpEngine(config.httpEngine);
    } else if (kind === 'image-generation') {
      engines[kind] = createImageGenerationEngine();
    } else if (kind === 'video-generation') {
      engines[kind] = createVideoGenerationEngine();
    } else {
      engines[kind] = createFaceDetectionEngine();
    }
  }
  return engines;
}
