export { TASK_KIND_CATALOG, TASK_KINDS, TASK_REQUEST_SCHEMAS, isTaskKind, perTaskKind } from './catalog';
export type { TaskKind, TaskKindDefinition, TaskRequest } from './catalog';
export { FAIRNESS_KEY, httpsUrl, MAX_IMAGE_BYTES, MAX_URL_LENGTH } from './request-fields';
