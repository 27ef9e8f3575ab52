import { Batcher } from '../src/infra/batcher';
import { BoundedMap } from '../src/infra/bounded-map';

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

describe('BoundedMap', () => {
  it('drops the oldest tenth when full, never growing past its bound', () => {
    const m = new BoundedMap<number, number>(10);
    for (let i = 0; i < 10; i++) m.set(i, i);
    m.set(3, 33); // an existing key is updated in place, nothing dropped
    expect(m.size).toBe(10);
    m.set(10, 10);
    expect(m.size).toBe(10);
    expect(m.has(0)).toBe(false);
    expect(m.get(3)).toBe(33);
    expect(m.get(10)).toBe(10);
  });
});
