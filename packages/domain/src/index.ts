export * from './task-rules';
export { finishTask, finishTaskAndRecord } from './finish-task';
export type { FinishTaskInput, FinishedTask, Queryable } from './finish-task';
export { recordTaskStatus, seedTaskStatus, taskStatusMarkerKey } from './task-status-marker';
export type { MarkerRedis } from './task-status-marker';
