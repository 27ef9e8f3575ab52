import type { Config } from '@taskapi/config';
import type { TaskKind } from '@taskapi/task-kinds';
import type { Engine } from './engine';
import { createFaceDetectionEngine } from './face-detection';
import { createHttpEngine } from './http-engine';
import { createImageGenerationEngine } from './image-generation';
import { ffmpegCanEncodeH264 } from './ffmpeg-mp4';
import { createVideoGenerationEngine, type VideoFormat } from './video-generation';

/** The built-in video engine's format: `auto` is mp4 when ffmpeg can encode H.264, else gif. */
export function resolveVideoFormat(config: Pick<Config, 'videoFormat' | 'ffmpegPath'>): VideoFormat {
  if (config.videoFormat === 'gif') return 'gif';
  const available = ffmpegCanEncodeH264(config.ffmpegPath);
  if (config.videoFormat === 'mp4' && !available) {
    throw new Error(`VIDEO_FORMAT=mp4 needs ffmpeg with libx264 (FFMPEG_PATH=${config.ffmpegPath})`);
  }
  return available ? 'mp4' : 'gif';
}

interface BuiltinEngine {
  engine: Engine;
  /** For the start-up log when more than `builtin`, e.g. `builtin (mp4)`. */
  description?: string;
}

/** The built-in CPU engine of each kind; a kind missing here fails to compile. */
const BUILTIN_ENGINES = {
  'video-generation': (config) => {
    const format = resolveVideoFormat(config);
    return { engine: createVideoGenerationEngine({ format, ffmpegPath: config.ffmpegPath }), description: `builtin (${format})` };
  },
  'image-generation': () => ({ engine: createImageGenerationEngine() }),
  'face-detection': () => ({ engine: createFaceDetectionEngine() }),
} satisfies Record<TaskKind, (config: Config) => BuiltinEngine>;

export interface Engines {
  engines: Partial<Record<TaskKind, Engine>>;
  /** What each kind runs on, for the start-up log: `http`, `builtin`, or `builtin (mp4)`/`builtin (gif)` for video. */
  description: Partial<Record<TaskKind, string>>;
}

/** The engine of each kind this process runs, as configured (the kind's engine variable, `ENGINE_<KIND>=builtin|http`). */
export function createEngines(config: Config, kinds: readonly TaskKind[]): Engines {
  const engines: Partial<Record<TaskKind, Engine>> = {};
  const description: Partial<Record<TaskKind, string>> = {};
  for (const kind of kinds) {
    if (config.engines[kind] === 'http') {
      if (!config.httpEngine) throw new Error('HTTP_ENGINE_URL is required for the http engine');
      engines[kind] = createHttpEngine(config.httpEngine);
      description[kind] = 'http';
    } else {
      const builtin: BuiltinEngine = BUILTIN_ENGINES[kind](config);
      engines[kind] = builtin.engine;
      description[kind] = builtin.description ?? 'builtin';
    }
  }
  return { engines, description };
}
