import type { McpOAuth } from "../mcp/oauth/mcp-oauth.js";
import { json } from "./http.js";
import { oauthCallbackQuery } from "./mcp-schemas.js";
import { parseQuery } from "./request-parsing.js";
import type { Route } from "./router.js";

/**
 * `GET /v1/mcp/oauth/callback`: where an MCP server's authorization server sends the user back.
 * Public (a browser carries no API token), but it finishes only the sign-in its `state` names,
 * once, before it expires; the tokens become the user's who started it only once that user gives
 * the code shown here in their own conversation (docs/mcp-oauth.md, "Whose sign-in").
 */
export function mcpOAuthRoutes(oauth: McpOAuth): Route[] {
  return [
    {
      method: "GET",
      pattern: /^\/v1\/mcp\/oauth\/callback$/,
      handler: async (request) => {
        const query = parseQuery(request, oauthCallbackQuery);
        const { server, code } = await oauth.complete({ state: query.state, code: query.code, error: query.error });
        const message =
          `Signed in to ${server}. To finish, say "confirm ${code}" to the assistant in your own conversation, where you asked to sign in. ` +
          `Only do this if you asked for this link: the code links this ${server} account to whoever asked for it.`;
        return json(200, { status: "confirm", server, code, message }, { "cache-control": "no-store" });
      },
    },
  ];
}
