import { describe, expect, it } from "vitest";
import { loadConfig } from "../../../lib/config/config.js";
import { createMcpOAuth } from "../../../lib/mcp/oauth/create-mcp-oauth.js";
import { McpOAuth } from "../../../lib/mcp/oauth/mcp-oauth.js";
import { testDatabase } from "../../support/mongo.js";

describe("createMcpOAuth", () => {
  const { db } = testDatabase("create_mcp_oauth");

  it("returns undefined without a KMS key or a local directory (a function without a key)", () => {
    expect(createMcpOAuth(loadConfig({}), { db, redirectUrl: "https://a.example.com/cb" })).toBeUndefined();
  });

  it("returns the OAuth side with a KMS key configured, or with the local directory", () => {
    expect(createMcpOAuth(loadConfig({ MCP_OAUTH_KMS_KEY_ID: "alias/tw" }), { db, redirectUrl: "https://a.example.com/cb" })).toBeInstanceOf(McpOAuth);
    expect(createMcpOAuth(loadConfig({}), { db, redirectUrl: "https://a.example.com/cb", localDir: "/tmp/tw-local" })).toBeInstanceOf(McpOAuth);
  });
});
