import type { LifecycleResources } from '../stores';

/**
 * The scheduler's capacity: the accounts' own caps (an operator's change applies within about a
 * second on every worker, docs/fair-scheduling.md). No task changes state here, but the places
 * of waiting tasks may: an account whose cap rose gets its next tasks released.
 */
export class CapacitySystem {
  constructor(private readonly r: LifecycleResources) {}

  /** Replaces every account's own cap (accounts not in `caps` take the default). Returns how many changed. */
  setCaps(caps: ReadonlyMap<string, number>): Promise<number> {
    return this.r.stores.scheduler.setCaps(caps);
  }
}
