import type { McpOAuth } from "../mcp/oauth/mcp-oauth.js";
import { json } from "./http.js";
import { oauthCallbackQuery } from "./mcp-schemas.js";
import { parseQuery } from "./request-parsing.js";
import type { Route } from "./router.js";

/**
 * `GET /v1/mcp/oauth/callback`: where an MCP server's authorization server sends the user back.
 * Public (a browser carries no API token), but it finishes only the sign-in its `state` names,
 * once, before it expires, and for the user who started it (docs/mcp-oauth.md).
 */
export function mcpOAuthRoutes(oauth: McpOAuth): Route[] {
  return [
    {
      method: "GET",
      pattern: /^\/v1\/mcp\/oauth\/callback$/,
      handler: async (request) => {
        const query = parseQuery(request, oauthCallbackQuery);
        const { server } = await oauth.complete({ state: query.state, code: query.code, error: query.error });
        return json(200, { status: "signed_in", server }, { "cache-control": "no-store" });
      },
    },
  ];
}
