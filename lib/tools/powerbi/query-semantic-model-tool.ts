import { z } from "zod";
import { DEFAULT_SQL_MAX_RESULT_BYTES, DEFAULT_SQL_MAX_ROWS } from "../../config/tools-config.js";
import type { ToolContext, ToolDefinition } from "../tool.js";
import { formatResultTable } from "../sql/result-table.js";
import type { PowerBiClient } from "./power-bi-client.js";
import { powerBiUserOf, type PowerBiIdentityOptions } from "./power-bi-identity.js";

export interface QuerySemanticModelToolOptions {
  client: PowerBiClient;
  /** How a caller becomes the Power BI user a query runs as (`powerBiUserOf`); a caller it cannot name is refused. */
  identities: PowerBiIdentityOptions;
  /** Default: `DEFAULT_SQL_MAX_ROWS`. */
  maxRows?: number;
  /** Most bytes of values a result holds, counted as `sql_query` counts them. Default: `DEFAULT_SQL_MAX_RESULT_BYTES`. */
  maxBytes?: number;
  /** What the model should know of the semantic model: tables, measures. */
  modelDescription?: string;
}

const schema = z.object({
  dax: z.string().trim().min(1).max(20_000).describe("One DAX query, starting with EVALUATE (or DEFINE ... EVALUATE)"),
});

/** `query_semantic_model`: a DAX query against the Power BI semantic model, answered as a compact table. */
export function createQuerySemanticModelTool(options: QuerySemanticModelToolOptions): ToolDefinition<typeof schema> {
  const maxRows = options.maxRows ?? DEFAULT_SQL_MAX_ROWS;
  const maxBytes = options.maxBytes ?? DEFAULT_SQL_MAX_RESULT_BYTES;
  return {
    name: "query_semantic_model",
    description:
      "Run a DAX query (EVALUATE ...) against the Power BI semantic model and get a table; use it for the " +
      `official measures (e.g. [Gross Margin %]). At most ${maxRows} rows.` +
      (options.modelDescription ? `\n${options.modelDescription}` : ""),
    schema,
    sideEffects: false,
    // Its text comes from outside the conversation (or repeats what such a tool returned): it may carry instructions.
    trust: "untrusted",
    async run(input: z.infer<typeof schema>, ctx: ToolContext): Promise<string> {
      // Refused before any request when the caller has no Power BI identity: never the service's own view.
      const userName = powerBiUserOf(ctx.caller.principal, options.identities);
      // executeQueries only evaluates; DAX has no statements that write, so no read-only check is needed.
      const result = await options.client.executeQuery(input.dax, { maxRows, maxBytes }, { userName, signal: ctx.signal });
      return formatResultTable(result, maxRows);
    },
  };
}
