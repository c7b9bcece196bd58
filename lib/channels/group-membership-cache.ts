/** How long a looked-up group membership is reused before it is read again. */
export const DEFAULT_GROUP_CACHE_MS = 300_000;
/** Most cached lookups; the oldest is dropped past it, so memory stays bounded whoever writes in. */
export const DEFAULT_GROUP_CACHE_ENTRIES = 10_000;
/** Most bytes of cached lookups (a Slack group's members can be thousands of ids); the oldest are dropped past it. */
export const DEFAULT_GROUP_CACHE_BYTES = 8 * 1024 * 1024;

/** Estimated bytes of a lookup's key and value: strings as UTF-16, a few bytes per item and entry. */
function weigh(key: string, value: unknown): number {
  let bytes = 2 * key.length + 64;
  if (typeof value === "string") return bytes + 2 * value.length;
  if (Array.isArray(value) || value instanceof Set) {
    for (const item of value) bytes += 16 + (typeof item === "string" ? 2 * item.length : 16);
    return bytes;
  }
  return bytes + 2 * (JSON.stringify(value) ?? "").length;
}

interface Entry<T> {
  value: Promise<T>;
  expiresAt: number;
  bytes: number;
}

/**
 * Lookups of group memberships, reused for a while and shared by concurrent callers; a failed
 * lookup is forgotten at once so the next turn asks again. Bounded by entries and by bytes (what
 * each looked-up membership holds, counted once it is known): the oldest are dropped first.
 */
export class GroupMembershipCache<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private bytes = 0;

  constructor(
    private readonly ttlMs: number = DEFAULT_GROUP_CACHE_MS,
    private readonly maxEntries: number = DEFAULT_GROUP_CACHE_ENTRIES,
    private readonly now: () => number = Date.now,
    private readonly maxBytes: number = DEFAULT_GROUP_CACHE_BYTES,
  ) {}

  /** Bytes the cached lookups hold (estimated). */
  get heldBytes(): number {
    return this.bytes;
  }

  get(key: string, load: () => Promise<T>): Promise<T> {
    const hit = this.entries.get(key);
    if (hit && this.now() < hit.expiresAt) return hit.value;
    this.forget(key);
    const value = load();
    const entry: Entry<T> = { value, expiresAt: this.now() + this.ttlMs, bytes: weigh(key, undefined) };
    this.entries.set(key, entry);
    this.bytes += entry.bytes;
    value.then(
      (loaded) => {
        if (this.entries.get(key) !== entry) return;
        const bytes = weigh(key, loaded);
        this.bytes += bytes - entry.bytes;
        entry.bytes = bytes;
        this.trim();
      },
      () => {
        if (this.entries.get(key) === entry) this.forget(key);
      },
    );
    this.trim();
    return value;
  }

  private forget(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.bytes -= entry.bytes;
  }

  private trim(): void {
    while (this.entries.size > this.maxEntries || (this.bytes > this.maxBytes && this.entries.size > 0)) {
      this.forget(this.entries.keys().next().value as string);
    }
  }
}
