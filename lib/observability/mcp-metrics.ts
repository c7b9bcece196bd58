/**
 * The MCP client's metrics (docs/mcp.md, "Limits and failures"), published in namespace `Threadwise`
 * with the `service` dimension only and the server as a property of each record (never a
 * dimension, so the number of metrics does not grow with the tenants' servers).
 */
export const MCP_METRIC_NAMES = {
  /** One data point per MCP tool call, its duration in milliseconds. */
  callDuration: "McpCallDuration",
  /** One per call or discovery that did not succeed (timeout, unreachable, refused, tool error, sign-in needed). */
  failures: "McpFailures",
} as const;

/** The EMF properties of a record: the server's name, the outcome and whether it was a call or a discovery. */
export const MCP_SERVER_PROPERTY = "mcpServer";
export const MCP_OUTCOME_PROPERTY = "mcpOutcome";
