import { describe, expect, it } from "vitest";
import { putMcpServerBody } from "../../lib/api/admin-mcp-schemas.js";

const body = (server: unknown) => ({ issuer: "api", tenant: "acme", server });

describe("putMcpServerBody", () => {
  it("returns a Streamable HTTP entry as given", () => {
    const server = { name: "wiki", transport: { kind: "streamable-http", url: "https://wiki.example/mcp" } };
    expect(putMcpServerBody.parse(body(server)).server).toEqual(server);
  });

  it("throws for a stdio entry and for an instance metadata address", () => {
    expect(putMcpServerBody.safeParse(body({ name: "x", transport: { kind: "stdio", command: "sh" } })).success).toBe(false);
    expect(putMcpServerBody.safeParse(body({ name: "x", transport: { kind: "streamable-http", url: "http://169.254.169.254/latest" } })).success).toBe(false);
  });
});
