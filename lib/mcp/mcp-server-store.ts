import type { Collection, Db } from "mongodb";
import type { IssuerKind } from "../auth/principal.js";
import type { McpServerEntry } from "../config/mcp-servers-config.js";
import { ByteBoundedMap } from "../byte-bounded-map.js";
import { COLLECTIONS } from "../store/collections.js";

/**
 * Most bytes of tenants' entries a container keeps cached. An entry is a few hundred bytes (a name,
 * a URL, an auth reference, a few limits), a tenant has a handful: 2 MB holds the entries of
 * about a thousand tenants, more than one container serves within the cache's minute, while the
 * memory stays flat however many tenants it sees; the least recently read is read again.
 */
export const DEFAULT_MCP_SERVER_CACHE_BYTES = 2 * 1024 * 1024;

/** Whose servers: a tenant of one issuer kind, as the admin API names it (`tenant` null: API users without a tenant). */
export interface McpTenant {
  issuer: IssuerKind;
  tenant: string | null;
}

/** One tenant's entry for one server. */
export interface McpServerDocument {
  /** `[issuer, tenant, name]` as JSON: one entry per tenant and name. */
  _id: string;
  issuer: IssuerKind;
  tenant: string | null;
  name: string;
  entry: McpServerEntry;
  updatedAt: Date;
  updatedBy: string;
}

export interface McpServerStoreOptions {
  /** Milliseconds a tenant's entries are reused; 0 reads each time. */
  cacheMs: number;
  /** Most bytes of cached entries (estimated); the least recently read tenant is dropped past it. Default: `DEFAULT_MCP_SERVER_CACHE_BYTES`. */
  cacheBytes?: number;
  now?: () => number;
}

const idOf = (t: McpTenant, name: string) => JSON.stringify([t.issuer, t.tenant, name]);
const tenantKey = (t: McpTenant) => JSON.stringify([t.issuer, t.tenant]);

interface CachedEntries {
  at: number;
  entries: McpServerEntry[];
}

/** Estimated bytes of a tenant's cached entries: key and entries as JSON, UTF-16, and the map's and objects' overhead. */
const cachedBytes = (key: string, cached: CachedEntries) => 2 * (key.length + JSON.stringify(cached.entries).length) + 64 + 64 * cached.entries.length;

/**
 * The MCP servers tenants added through `/v1/admin/mcp-servers`, read per tenant and kept for
 * `cacheMs` (at most a minute): a change made here is seen at once by this container and within
 * `cacheMs` by the others. The cache is bounded by bytes (`cacheBytes`), least recently read first.
 */
export class McpServerStore {
  readonly #collection: Collection<McpServerDocument>;
  readonly #cache: ByteBoundedMap<string, CachedEntries>;
  readonly #now: () => number;

  constructor(
    db: Db,
    private readonly options: McpServerStoreOptions,
  ) {
    this.#collection = db.collection<McpServerDocument>(COLLECTIONS.mcpServers);
    this.#now = options.now ?? Date.now;
    this.#cache = new ByteBoundedMap(options.cacheBytes ?? DEFAULT_MCP_SERVER_CACHE_BYTES, cachedBytes);
  }

  /** Bytes the cached entries hold (estimated), at most `cacheBytes`. */
  get cachedBytes(): number {
    return this.#cache.bytes;
  }

  /** The tenant's entries, by name, from the cache where fresh. */
  async entriesOf(tenant: McpTenant): Promise<McpServerEntry[]> {
    const key = tenantKey(tenant);
    const hit = this.#cache.get(key);
    if (hit && this.#now() - hit.at < this.options.cacheMs) return hit.entries;
    const entries = (await this.list(tenant)).map((d) => d.entry);
    this.#cache.set(key, { at: this.#now(), entries });
    return entries;
  }

  /** The tenant's entries as stored, by name, without the cache. */
  async list(tenant: McpTenant): Promise<McpServerDocument[]> {
    return this.#collection.find({ issuer: tenant.issuer, tenant: tenant.tenant }).sort({ name: 1 }).toArray();
  }

  /** Adds or replaces the tenant's entry of that name. */
  async put(tenant: McpTenant, entry: McpServerEntry, by: string): Promise<McpServerDocument> {
    const doc: McpServerDocument = { _id: idOf(tenant, entry.name), ...tenant, name: entry.name, entry, updatedAt: new Date(this.#now()), updatedBy: by };
    await this.#collection.replaceOne({ _id: doc._id }, doc, { upsert: true });
    this.#cache.delete(tenantKey(tenant));
    return doc;
  }

  /** Removes the tenant's entry of that name; whether there was one. */
  async remove(tenant: McpTenant, name: string): Promise<boolean> {
    const { deletedCount } = await this.#collection.deleteOne({ _id: idOf(tenant, name) });
    this.#cache.delete(tenantKey(tenant));
    return deletedCount > 0;
  }
}
