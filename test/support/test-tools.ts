import { z } from "zod";
import type { ToolDefinition } from "../../lib/tools/tool.js";

/** A tool whose output size the test chooses: `big_report {"rows": N}`. */
export const bigReport: ToolDefinition = {
  name: "big_report",
  description: "Returns a report with the given number of rows.",
  schema: z.object({ rows: z.number().int().min(1).max(100_000) }),
  sideEffects: false,
  run: async ({ rows }: { rows: number }) =>
    ["| row | region | revenue |", ...Array.from({ length: rows }, (_, i) => `| ${i + 1} | region-${i % 7} | ${(i * 37) % 1000} |`)].join("\n"),
};
