import type { McpServerEntry } from "../config/mcp-servers-config.js";

/** A tenant's servers: its own entries over the configured defaults of the same name, sorted by name (a stable tool order). */
export function effectiveMcpServers(defaults: readonly McpServerEntry[], own: readonly McpServerEntry[]): McpServerEntry[] {
  const byName = new Map<string, McpServerEntry>();
  for (const entry of [...defaults, ...own]) byName.set(entry.name, entry);
  return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}
