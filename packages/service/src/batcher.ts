interface Pending<T, R> {
  item: T;
  weight: number;
  resolve: (r: R) => void;
  reject: (e: unknown) => void;
}

interface Lane<T, R> {
  flushing: boolean;
  queue: Pending<T, R>[];
}

export interface BatcherOptions<T> {
  /** Most items in one flush. */
  maxItems?: number;
  /** Weight of an item (e.g. bytes) and the most weight in one flush; one item may exceed it alone. */
  weight?: (item: T) => number;
  maxWeight?: number;
}

/**
 * Natural batching ("group commit") per key: an item submitted while its key is idle is flushed at
 * once, alone; items submitted while a flush for their key is running wait for it and then go
 * together in the next one. No timers, so no added latency when idle, and under load the batch
 * size follows the load. `flush` returns one result per item, in order.
 */
export class Batcher<K, T, R> {
  private readonly lanes = new Map<K, Lane<T, R>>();
  private readonly maxItems: number;
  private readonly maxWeight: number;
  private readonly weigh: (item: T) => number;

  constructor(
    private readonly flush: (key: K, items: T[]) => Promise<R[]>,
    opts: BatcherOptions<T> = {},
  ) {
    this.maxItems = opts.maxItems ?? 100;
    this.maxWeight = opts.maxWeight ?? Number.POSITIVE_INFINITY;
    this.weigh = opts.weight ?? (() => 0);
  }

  submit(key: K, item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      let lane = this.lanes.get(key);
      if (!lane) {
        lane = { flushing: false, queue: [] };
        this.lanes.set(key, lane);
      }
      lane.queue.push({ item, weight: this.weigh(item), resolve, reject });
      if (!lane.flushing) void this.drain(key, lane);
    });
  }

  private async drain(key: K, lane: Lane<T, R>): Promise<void> {
    lane.flushing = true;
    while (lane.queue.length > 0) {
      let weight = 0;
      let n = 0;
      while (n < lane.queue.length && n < this.maxItems) {
        const w = (lane.queue[n] as Pending<T, R>).weight;
        if (n > 0 && weight + w > this.maxWeight) break;
        weight += w;
        n++;
      }
      const batch = lane.queue.splice(0, n);
      try {
        const results = await this.flush(key, batch.map((p) => p.item));
        if (results.length !== batch.length) throw new Error(`flush returned ${results.length} results for ${batch.length} items`);
        batch.forEach((p, i) => p.resolve(results[i] as R));
      } catch (err) {
        for (const p of batch) p.reject(err);
      }
    }
    lane.flushing = false;
    this.lanes.delete(key);
  }
}

type Settled<R> = { value: R } | { failure: unknown };

export interface BatchedStatementOptions {
  /** Most items in one call. */
  maxItems?: number;
  /** True for an error that every item would meet alone too (a lost connection): no retry one by one. */
  failsEveryItem?: (err: unknown) => boolean;
}

/**
 * One database (or other) call for every item waiting per key, batched as `Batcher` does. When a
 * batch's call fails, each of its items is tried again alone, so an item the call refuses fails
 * only itself and the others go through; an error every item would meet anyway is every item's.
 */
export class BatchedStatement<K, T, R> {
  private readonly batcher: Batcher<K, T, Settled<R>>;

  constructor(run: (key: K, items: T[]) => Promise<R[]>, opts: BatchedStatementOptions = {}) {
    this.batcher = new Batcher(
      async (key, items) => {
        try {
          return (await run(key, items)).map((value) => ({ value }));
        } catch (err) {
          if (items.length === 1 || opts.failsEveryItem?.(err)) throw err;
          return Promise.all(items.map((item) => run(key, [item]).then(([value]) => ({ value: value as R }), (failure: unknown) => ({ failure }))));
        }
      },
      { maxItems: opts.maxItems },
    );
  }

  async call(key: K, item: T): Promise<R> {
    const settled = await this.batcher.submit(key, item);
    if ('failure' in settled) throw settled.failure;
    return settled.value;
  }
}
