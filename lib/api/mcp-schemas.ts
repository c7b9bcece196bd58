import { z } from "zod";

/**
 * One JSON-RPC 2.0 message as the MCP endpoint takes it (a request, a notification or a response),
 * checked only as far as the envelope: the MCP SDK checks each method's own parameters.
 */
const jsonRpcMessage = z.looseObject({
  jsonrpc: z.literal("2.0"),
  id: z.union([z.string(), z.number()]).optional(),
  method: z.string().min(1).max(200).optional(),
});

/** The body of `POST /v1/mcp`: one message or a batch (docs/mcp-endpoint.md). */
export const mcpMessageBody = z.union([jsonRpcMessage, z.array(jsonRpcMessage).min(1).max(100)]);

/** The answer of `POST /v1/mcp` to a request: a JSON-RPC response, or one per request of a batch. */
const jsonRpcResponse = z.looseObject({
  jsonrpc: z.literal("2.0"),
  id: z.union([z.string(), z.number(), z.null()]),
  result: z.unknown().optional(),
  error: z.looseObject({ code: z.number(), message: z.string() }).optional(),
});
export const mcpResponse = z.union([jsonRpcResponse, z.array(jsonRpcResponse)]);

/** Where an MCP server's per-user sign-in comes back (docs/mcp-oauth.md): the authorization server's redirect. */
export const oauthCallbackQuery = z.strictObject({
  code: z.string().min(1).max(4096).optional(),
  state: z.string().min(1).max(200),
  error: z.string().min(1).max(200).optional(),
  error_description: z.string().max(1000).optional(),
  iss: z.string().max(1000).optional(),
});
/** What the callback page answers in JSON: which server the user is now signed in to. */
export const oauthCallbackResult = z.object({
  status: z.literal("confirm"),
  server: z.string(),
  code: z.string().meta({ description: "The confirmation code the user who asked for the link gives in their own conversation." }),
  message: z.string(),
});
