/** A markdown table; a column whose alignment is "right" gets `---:`. */
export function markdownTable(header: readonly string[], rows: readonly (readonly string[])[], align: readonly ("left" | "right")[] = []): string {
  const line = (cells: readonly string[]) => `| ${cells.join(" | ")} |`;
  const rule = `|${header.map((_, i) => (align[i] === "right" ? "---:" : "---")).join("|")}|`;
  return [line(header), rule, ...rows.map(line)].join("\n");
}

/** Thousands separated, as the README writes numbers. */
export const formatCount = (n: number): string => Math.round(n).toLocaleString("en-US");
