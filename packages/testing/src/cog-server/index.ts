// A Cog model server for tests, the chaos run and the benchmarks (docs/models.md).
export { startCogServer } from './server';
export type { CogServer, CogServerOptions } from './server';
export { spawnCogServer } from './spawn';
export type { SpawnCogServerOptions, SpawnedCogServer } from './spawn';
export { CogFile } from './model';
export type { CogModel, MetricMode, RunContext } from './model';
export { MODEL_NAMES, createModel } from './models';
export type { ModelName, ModelOptions } from './models';
export { validateInput, withDefaults } from './input-schema';
export type { InputError, InputField, InputSchema, InputValidation } from './input-schema';
export { HEALTH_STATUSES } from './health';
export type { HealthStatus } from './health';
export type { OutputAs } from './output-files';
export type { PredictionRecord } from './prediction-service';
export type { PredictionJson, PredictionStatus } from './prediction';
export { tqdmLine } from './tqdm';
