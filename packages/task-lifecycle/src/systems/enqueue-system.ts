import type { NewTask, TaskPosition } from '@taskapi/scheduler';
import type { TaskKind } from '@taskapi/task-kinds';
import type { LifecycleResources } from '../stores';

/**
 * Enqueue: a created task joins its account's line in the scheduler. Its database step is the
 * creation itself (`create_tasks`, which charges for it: the API's task repository); a task whose
 * submission fails is restored by the task sweeper, which finds it queued in PostgreSQL and unknown
 * to the scheduler.
 */
export class EnqueueSystem {
  constructor(private readonly r: LifecycleResources) {}

  /**
   * Tasks of one kind join their accounts' lines (already known ones are left as they are).
   * Returns how many joined. `queued`: answer once they are in their lines, handing over the adding
   * of the jobs released meanwhile (see TaskScheduler.submit).
   */
  submit(kind: TaskKind, tasks: readonly NewTask[], opts: { queued?: (jobs: Promise<void>) => void } = {}): Promise<number> {
    return this.r.stores.scheduler.submit(kind, tasks, opts);
  }

  /** `submit`, answering where each task stands in its line (for the creation's answer). */
  submitAndPlace(kind: TaskKind, tasks: readonly NewTask[], opts: { queued?: (jobs: Promise<void>) => void } = {}): Promise<{ joined: number; positions: Map<string, TaskPosition> }> {
    return this.r.stores.scheduler.submitAndPlace(kind, tasks, opts);
  }
}
