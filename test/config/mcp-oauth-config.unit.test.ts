import { describe, expect, it } from "vitest";
import { DEFAULT_MCP_OAUTH_SIGN_IN_TTL_SECONDS, loadMcpOAuthConfig } from "../../lib/config/mcp-oauth-config.js";

describe("loadMcpOAuthConfig", () => {
  it("returns no callback URL and no KMS key unless set, and the default sign-in time", () => {
    expect(loadMcpOAuthConfig({})).toEqual({ redirectUrl: undefined, kmsKeyId: undefined, signInTtlSeconds: DEFAULT_MCP_OAUTH_SIGN_IN_TTL_SECONDS });
    const set = loadMcpOAuthConfig({ MCP_OAUTH_REDIRECT_URL: "https://api.example.com/v1/mcp/oauth/callback", MCP_OAUTH_KMS_KEY_ID: "alias/tw" });
    expect(set).toMatchObject({ redirectUrl: "https://api.example.com/v1/mcp/oauth/callback", kmsKeyId: "alias/tw" });
  });

  it("throws for a callback that is not an http(s) URL and for a sign-in time of zero", () => {
    expect(() => loadMcpOAuthConfig({ MCP_OAUTH_REDIRECT_URL: "javascript:alert(1)" })).toThrow(/invalid configuration/);
    expect(() => loadMcpOAuthConfig({ MCP_OAUTH_SIGN_IN_TTL_SECONDS: "0" })).toThrow(/invalid configuration/);
  });
});
