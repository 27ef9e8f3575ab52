import { BatchedStatement, Batcher } from '../src/batcher';

describe('Batcher (natural batching per key)', () => {
  it('flushes an idle key at once and groups what arrives meanwhile, in order', async () => {
    const flushes: Array<[string, number[]]> = [];
    const batcher = new Batcher<string, number, number>(async (key, items) => {
      flushes.push([key, items]);
      await new Promise((r) => setTimeout(r, 5));
      return items.map((i) => i * 10);
    });
    const results = await Promise.all([1, 2, 3, 4].map((i) => batcher.submit('a', i)).concat([batcher.submit('b', 9)]));
    expect(results).toEqual([10, 20, 30, 40, 90]);
    expect(flushes).toEqual([
      ['a', [1]],
      ['b', [9]],
      ['a', [2, 3, 4]],
    ]);
  });

  it('respects the item and weight limits (an oversized item still goes, alone)', async () => {
    const sizes: number[][] = [];
    const batcher = new Batcher<string, number, number>(
      async (_key, items) => {
        sizes.push(items);
        await new Promise((r) => setImmediate(r));
        return items;
      },
      { maxItems: 3, weight: (n) => n, maxWeight: 10 },
    );
    await Promise.all([1, 1, 1, 1, 1, 6, 6, 50, 2].map((n) => batcher.submit('k', n)));
    expect(sizes).toEqual([[1], [1, 1, 1], [1, 6], [6], [50], [2]]);
  });

  it('rejects every item of a failed flush and keeps serving later ones', async () => {
    let fail = true;
    const batcher = new Batcher<string, number, number>(async (_key, items) => {
      if (fail) {
        fail = false;
        throw new Error('boom');
      }
      return items;
    });
    await expect(batcher.submit('k', 1)).rejects.toThrow('boom');
    await expect(batcher.submit('k', 2)).resolves.toBe(2);
  });
});


describe('BatchedStatement', () => {
  /** A call that refuses any batch holding a negative number, and records what it was given. */
  const calls: number[][] = [];
  const run = async (_key: string, items: number[]) => {
    calls.push(items);
    await new Promise((r) => setImmediate(r));
    if (items.some((n) => n < 0)) throw new Error(`refused ${items.join(',')}`);
    return items.map((n) => n * 10);
  };

  beforeEach(() => {
    calls.length = 0;
  });

  it('calls once for the waiting items; a refused batch is tried one by one, so only the bad item fails', async () => {
    const statement = new BatchedStatement(run);
    const results = await Promise.allSettled([1, 2, -3, 4].map((n) => statement.call('k', n)));
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : (r.reason as Error).message))).toEqual([10, 20, 'refused -3', 40]);
    // The first alone, the other three together (refused), then each of those three alone.
    expect(calls).toEqual([[1], [2, -3, 4], [2], [-3], [4]]);
  });

  it('gives every item the batch error when each would meet it alone too', async () => {
    const statement = new BatchedStatement(run, { failsEveryItem: () => true });
    const results = await Promise.allSettled([1, -2, 3].map((n) => statement.call('k', n)));
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected']);
    expect(calls).toEqual([[1], [-2, 3]]);
  });
});
