// The engine interface every task kind runs through, and the built-in CPU engines: a real PNG
// from the prompt, a real playable video, real face boxes from a detector shipped in an npm
// package. The worker runs them in process; the Cog test server (@taskapi/testing) serves them
// as models behind the Cog prediction protocol.
import type { TaskKind } from '@taskapi/task-kinds';
import type { Engine } from './engine';
import { createFaceDetectionEngine } from './face-detection';
import { ffmpegCanEncodeH264 } from './ffmpeg-mp4';
import { createImageGenerationEngine } from './image-generation';
import { createVideoGenerationEngine, type VideoFormat } from './video-generation';

export { abortable } from './abortable';
export { decodeImage } from './decode-image';
export { EngineBusyError, EngineError, EngineInterruptedError, ImageFetchError, TaskCancelled, TaskInputError, WorkerShutdown } from './engine';
export type { Engine, EngineFile, EngineImage, EngineInput, EngineOutput } from './engine';
export { createFaceDetectionEngine, MAX_DETECTION_SIDE } from './face-detection';
export type { FaceBox, FaceDetectionOptions } from './face-detection';
export { ffmpegCanEncodeH264 } from './ffmpeg-mp4';
export { createImageGenerationEngine } from './image-generation';
export { createVideoGenerationEngine } from './video-generation';
export type { VideoFormat } from './video-generation';

/** How the built-in video engine encodes: `VIDEO_FORMAT` and `FFMPEG_PATH`. */
export interface VideoSettings {
  videoFormat: 'auto' | 'mp4' | 'gif';
  ffmpegPath: string;
}

/** The built-in video engine's format: `auto` is mp4 when ffmpeg can encode H.264, else gif. */
export function resolveVideoFormat(settings: VideoSettings): VideoFormat {
  if (settings.videoFormat === 'gif') return 'gif';
  const available = ffmpegCanEncodeH264(settings.ffmpegPath);
  if (settings.videoFormat === 'mp4' && !available) {
    throw new Error(`VIDEO_FORMAT=mp4 needs ffmpeg with libx264 (FFMPEG_PATH=${settings.ffmpegPath})`);
  }
  return available ? 'mp4' : 'gif';
}

/** A built-in engine, with what it runs as for a start-up log (e.g. `builtin (mp4)`). */
export interface BuiltinEngine {
  engine: Engine;
  description: string;
}

/** The built-in CPU engine of each kind; a kind missing here fails to compile. */
const BUILTIN_ENGINES = {
  'video-generation': (settings) => {
    const format = resolveVideoFormat(settings);
    return { engine: createVideoGenerationEngine({ format, ffmpegPath: settings.ffmpegPath }), description: `builtin (${format})` };
  },
  'image-generation': () => ({ engine: createImageGenerationEngine(), description: 'builtin' }),
  'face-detection': () => ({ engine: createFaceDetectionEngine(), description: 'builtin' }),
} satisfies Record<TaskKind, (settings: VideoSettings) => BuiltinEngine>;

/** The built-in engine of `kind`. */
export function createBuiltinEngine(kind: TaskKind, settings: VideoSettings): BuiltinEngine {
  return BUILTIN_ENGINES[kind](settings);
}
