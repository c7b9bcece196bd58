/**
 * A map that forgets its least recently used entries once their bytes (as `weigh` estimates them)
 * pass `maxBytes`: memory bounded by what the entries hold, not by how many there are.
 */
export class ByteBoundedMap<K, V> {
  private readonly entries = new Map<K, { value: V; bytes: number }>();
  private total = 0;

  constructor(
    readonly maxBytes: number,
    private readonly weigh: (key: K, value: V) => number,
  ) {}

  /** Bytes of the entries held. */
  get bytes(): number {
    return this.total;
  }

  get size(): number {
    return this.entries.size;
  }

  /** The value, now the most recently used. */
  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry);
    return entry.value;
  }

  /** Sets the value (most recently used), then forgets the least recently used past `maxBytes`; an entry larger than `maxBytes` is not kept. */
  set(key: K, value: V): void {
    this.delete(key);
    const bytes = this.weigh(key, value);
    if (bytes > this.maxBytes) return;
    this.entries.set(key, { value, bytes });
    this.total += bytes;
    for (const [oldest, entry] of this.entries) {
      if (this.total <= this.maxBytes) break;
      this.entries.delete(oldest);
      this.total -= entry.bytes;
    }
  }

  delete(key: K): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.total -= entry.bytes;
  }
}
