import type { Collection, Db } from "mongodb";
import { LIMIT_NAMES, type LimitName, type LimitValues } from "../config/limits-config.js";
import { COLLECTIONS } from "../store/collections.js";
import { scopeId, type LimitScope } from "./limit-scope.js";

/** Collection of the limits set per tenant and user through the admin API. */
export const LIMIT_OVERRIDES_COLLECTION = COLLECTIONS.limitOverrides;

/** A tenant's or user's own limits: a number replaces the default, null removes the limit, absent keeps the default. */
export interface LimitOverrideDocument {
  _id: string;
  scope: LimitScope;
  limits: LimitValues;
  updatedAt: Date;
  updatedBy: string;
}

/** The limits that apply to one scope, the default where it sets none. */
export function effectiveLimits(defaults: LimitValues, own: LimitValues | undefined): Record<LimitName, number | null> {
  return Object.fromEntries(LIMIT_NAMES.map((name) => [name, own && name in own ? (own[name] ?? null) : (defaults[name] ?? null)])) as Record<
    LimitName,
    number | null
  >;
}

/** Scopes whose limits one container keeps at most (a few hundred bytes each): the least recently read leave first. */
export const DEFAULT_LIMIT_OVERRIDES_CACHE_ENTRIES = 5_000;

export interface LimitOverridesOptions {
  /** Milliseconds a read is reused; 0 reads each time. */
  cacheMs: number;
  /** Most scopes kept; default {@link DEFAULT_LIMIT_OVERRIDES_CACHE_ENTRIES}. */
  maxEntries?: number;
  now?: () => number;
}

/**
 * The limits set in the database, read for all scopes of a turn in one query and kept for
 * `cacheMs` (at most a minute), so a turn in a warm container reads none. A change made here is
 * seen at once by this container and within `cacheMs` by the others. The cache is bounded: an
 * entry older than `cacheMs` is dropped when met, and past `maxEntries` scopes the least recently
 * read are dropped, so a container that serves many users does not grow with them.
 */
export class LimitOverrides {
  private readonly collection: Collection<LimitOverrideDocument>;
  private readonly cache = new Map<string, { at: number; limits: LimitValues | undefined }>();
  private readonly now: () => number;
  private readonly maxEntries: number;

  constructor(
    db: Db,
    private readonly options: LimitOverridesOptions,
  ) {
    this.collection = db.collection<LimitOverrideDocument>(LIMIT_OVERRIDES_COLLECTION);
    this.now = options.now ?? Date.now;
    this.maxEntries = Math.max(1, options.maxEntries ?? DEFAULT_LIMIT_OVERRIDES_CACHE_ENTRIES);
  }

  /** Scopes in the cache now. */
  get cachedScopes(): number {
    return this.cache.size;
  }

  /** Keeps `id` as the most recently used entry and drops the least recently used past the bound. */
  private remember(id: string, entry: { at: number; limits: LimitValues | undefined }): void {
    this.cache.delete(id);
    this.cache.set(id, entry);
    for (const oldest of this.cache.keys()) {
      if (this.cache.size <= this.maxEntries) break;
      this.cache.delete(oldest);
    }
  }

  /** Each scope's own limits (undefined: none set), from the cache where fresh. */
  async forScopes(scopes: LimitScope[]): Promise<(LimitValues | undefined)[]> {
    const ids = scopes.map(scopeId);
    const now = this.now();
    const result = new Map<string, LimitValues | undefined>();
    const stale: string[] = [];
    for (const id of ids) {
      const hit = this.cache.get(id);
      if (hit && now - hit.at < this.options.cacheMs) {
        this.remember(id, hit);
        result.set(id, hit.limits);
      } else {
        if (hit) this.cache.delete(id);
        stale.push(id);
      }
    }
    if (stale.length > 0) {
      const docs = await this.collection.find({ _id: { $in: stale } }).toArray();
      const found = new Map(docs.map((d) => [d._id, d.limits]));
      for (const id of stale) {
        result.set(id, found.get(id));
        if (this.options.cacheMs > 0) this.remember(id, { at: now, limits: found.get(id) });
      }
    }
    return ids.map((id) => result.get(id));
  }

  /** The scope's own limits as stored, without the cache. */
  async get(scope: LimitScope): Promise<LimitOverrideDocument | null> {
    return this.collection.findOne({ _id: scopeId(scope) });
  }

  /** Replaces the scope's own limits (an empty object returns it to the defaults). */
  async set(scope: LimitScope, limits: LimitValues, by: string): Promise<LimitOverrideDocument> {
    const doc: LimitOverrideDocument = { _id: scopeId(scope), scope, limits, updatedAt: new Date(this.now()), updatedBy: by };
    await this.collection.replaceOne({ _id: doc._id }, doc, { upsert: true });
    if (this.options.cacheMs > 0) this.remember(doc._id, { at: this.now(), limits });
    return doc;
  }
}
