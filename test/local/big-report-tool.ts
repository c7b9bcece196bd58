import { z } from "zod";
import type { ToolDefinition } from "../../lib/tools/tool.js";

export interface BigReportOptions {
  /** Awaited before the report is returned, so a test can look at a turn while its tool runs. */
  gate?: () => Promise<void>;
}

/** A question that has the offline model call big_report for an output large enough to be offloaded. */
export const BIG_REPORT_EXAMPLE = 'big_report {"rows": 5000}';

/** A read-only tool whose output grows with `rows`: large enough to be offloaded and noticed in the view. */
export function bigReportTool(options: BigReportOptions = {}): ToolDefinition {
  const schema = z.strictObject({ rows: z.number().int().min(1).max(20_000) });
  return {
    name: "big_report",
    description: "Sales report with one line per order.",
    schema,
    sideEffects: false,
    examples: [BIG_REPORT_EXAMPLE],
    async run({ rows }: z.infer<typeof schema>) {
      await options.gate?.();
      const lines = ["order_id,region,product,amount_eur"];
      const regions = ["north", "south", "east", "west"];
      for (let i = 1; i <= rows; i++) lines.push(`${i},${regions[i % 4]},product-${i % 37},${(i * 7919) % 10_000}.${i % 100}`);
      return lines.join("\n");
    },
  };
}
