/** How long a looked-up group membership is reused before it is read again. */
export const DEFAULT_GROUP_CACHE_MS = 300_000;
/** Most cached lookups; the oldest is dropped past it, so memory stays bounded whoever writes in. */
export const DEFAULT_GROUP_CACHE_ENTRIES = 10_000;

/**
 * Lookups of group memberships, reused for a while and shared by concurrent callers; a failed
 * lookup is forgotten at once so the next turn asks again.
 */
export class GroupMembershipCache<T> {
  private readonly entries = new Map<string, { value: Promise<T>; expiresAt: number }>();

  constructor(
    private readonly ttlMs: number = DEFAULT_GROUP_CACHE_MS,
    private readonly maxEntries: number = DEFAULT_GROUP_CACHE_ENTRIES,
    private readonly now: () => number = Date.now,
  ) {}

  get(key: string, load: () => Promise<T>): Promise<T> {
    const hit = this.entries.get(key);
    if (hit && this.now() < hit.expiresAt) return hit.value;
    this.entries.delete(key);
    const value = load();
    const entry = { value, expiresAt: this.now() + this.ttlMs };
    this.entries.set(key, entry);
    value.catch(() => {
      if (this.entries.get(key) === entry) this.entries.delete(key);
    });
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value as string);
    return value;
  }
}
