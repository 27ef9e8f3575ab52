export * from './task-rules';
export { finishTask } from './finish-task';
export type { FinishTaskInput, FinishedTask, Queryable } from './finish-task';
