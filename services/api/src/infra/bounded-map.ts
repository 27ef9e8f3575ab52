/**
 * A Map that never grows past `maxEntries`: when full, the oldest tenth (by insertion order) is
 * dropped before a new key goes in. For in-process caches where an occasional miss is cheap.
 */
export class BoundedMap<K, V> extends Map<K, V> {
  constructor(private readonly maxEntries: number) {
    super();
  }

  override set(key: K, value: V): this {
    if (this.size >= this.maxEntries && !this.has(key)) {
      let n = Math.ceil(this.maxEntries / 10);
      for (const k of this.keys()) {
        this.delete(k);
        if (--n === 0) break;
      }
    }
    return super.set(key, value);
  }
}
