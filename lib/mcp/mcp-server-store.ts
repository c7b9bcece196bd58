import type { Collection, Db } from "mongodb";
import type { IssuerKind } from "../auth/principal.js";
import type { McpServerEntry } from "../config/mcp-servers-config.js";
import { COLLECTIONS } from "../store/collections.js";

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
  now?: () => number;
}

const idOf = (t: McpTenant, name: string) => JSON.stringify([t.issuer, t.tenant, name]);
const tenantKey = (t: McpTenant) => JSON.stringify([t.issuer, t.tenant]);

/**
 * The MCP servers tenants added through `/v1/admin/mcp-servers`, read per tenant and kept for
 * `cacheMs` (at most a minute): a change made here is seen at once by this container and within
 * `cacheMs` by the others.
 */
export class McpServerStore {
  readonly #collection: Collection<McpServerDocument>;
  readonly #cache = new Map<string, { at: number; entries: McpServerEntry[] }>();
  readonly #now: () => number;

  constructor(
    db: Db,
    private readonly options: McpServerStoreOptions,
  ) {
    this.#collection = db.collection<McpServerDocument>(COLLECTIONS.mcpServers);
    this.#now = options.now ?? Date.now;
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
