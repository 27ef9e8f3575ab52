import { BoundedMap } from '../src/infra/bounded-map';

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
