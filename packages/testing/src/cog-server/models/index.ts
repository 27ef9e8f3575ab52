import type { CogModel } from '../model';
import { echoModel } from './echo';
import { faceModel, type FaceModelOptions } from './face';
import { failModel, type FailModelOptions } from './fail';
import { hangModel } from './hang';
import { imageModel } from './image';
import { slowModel } from './slow';
import { videoModel, type VideoModelOptions } from './video';

/** Options some of the models take. */
export type ModelOptions = FaceModelOptions & FailModelOptions & VideoModelOptions;

const MODELS = {
  image: () => imageModel(),
  video: (opts) => videoModel(opts),
  face: (opts) => faceModel(opts),
  fail: (opts) => failModel(opts),
  slow: () => slowModel(),
  hang: () => hangModel(),
  echo: () => echoModel(),
} satisfies Record<string, (opts: ModelOptions) => CogModel>;

/** The models a server can run, by name. */
export type ModelName = keyof typeof MODELS;
export const MODEL_NAMES = Object.keys(MODELS) as ModelName[];

export function isModelName(name: string): name is ModelName {
  return Object.hasOwn(MODELS, name);
}

/** A fresh model (each server builds its own, as each container loads its own). */
export function createModel(name: ModelName, opts: ModelOptions = {}): CogModel {
  return MODELS[name](opts);
}
