import { ToolError } from "../../errors.js";
import type { QueryEngine, QueryLimits, QueryResult } from "./query-engine.js";
import { regionsOf, type RowPolicy } from "./row-policy.js";
import { restrictToRegions } from "./sales-dataset.js";

export interface RowScopedQueryEngineOptions {
  policy: RowPolicy;
  /** The whole database's image (`buildSalesDatabase`); made once, on the first query. */
  image: () => Promise<Uint8Array>;
  /** An engine over one image: one per set of regions callers may read. */
  engineFor: (image: () => Promise<Uint8Array>) => QueryEngine;
  /** The image holding only some regions' rows. Default: `restrictToRegions`. */
  restrict?: (image: Uint8Array, regions: readonly string[]) => Promise<Uint8Array>;
}

/**
 * Row filters the engine applies per caller (`SQL_ROW_POLICY`): each set of regions a policy gives
 * has an engine of its own over an image holding only those regions' rows, so a query, whatever its
 * text, finds no other rows; the model's SQL is never rewritten. A caller whose roles give no region
 * is refused, and one limited to some regions is told so above the table.
 */
export class RowScopedQueryEngine implements QueryEngine {
  readonly dialect: QueryEngine["dialect"];
  readonly schemaDescription: string;
  readonly #o: RowScopedQueryEngineOptions;
  readonly #engines = new Map<string, QueryEngine>();
  #whole: Promise<Uint8Array> | undefined;

  constructor(options: RowScopedQueryEngineOptions) {
    this.#o = options;
    const probe = this.#engine("*", "*");
    this.dialect = probe.dialect;
    this.schemaDescription = probe.schemaDescription;
  }

  async query(sql: string, limits: QueryLimits): Promise<QueryResult> {
    if (!limits.caller) throw new ToolError("refused: the sales database is read per caller, and this query names none", "sql_query");
    const regions = regionsOf(limits.caller, this.#o.policy);
    if (regions !== "*" && regions.length === 0) {
      throw new ToolError("refused: your roles give you no rows of the sales database (SQL_ROW_POLICY); ask an administrator for access", "sql_query");
    }
    const key = regions === "*" ? "*" : JSON.stringify(regions);
    const result = await this.#engine(key, regions).query(sql, limits);
    if (regions === "*") return result;
    const named = `the ${regions.join(", ")} region${regions.length === 1 ? "" : "s"}`;
    const notice = `Rows limited to ${named} by your access (SQL_ROW_POLICY); other regions' orders and customers are withheld.`;
    return { ...result, notice };
  }

  async close(): Promise<void> {
    await Promise.all([...this.#engines.values()].map((engine) => engine.close()));
  }

  #engine(key: string, regions: "*" | string[]): QueryEngine {
    let engine = this.#engines.get(key);
    if (!engine) {
      const whole = () => (this.#whole ??= this.#o.image());
      const restrict = this.#o.restrict ?? restrictToRegions;
      engine = this.#o.engineFor(regions === "*" ? whole : async () => restrict(await whole(), regions));
      this.#engines.set(key, engine);
    }
    return engine;
  }
}
