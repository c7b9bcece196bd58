import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, type App } from "../../lib/app.js";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import { loadConfig } from "../../lib/config/config.js";
import { crashOnceAt, SimulatedCrash } from "../support/crash.js";
import { startHostileServer } from "../support/mcp-servers.js";
import { useTestDatabase } from "../support/store-fixture.js";

const alice: Caller = { principal: apiPrincipal("alice", "acme"), roles: [] };
const database = useTestDatabase("mcp_retry", { clearBeforeEach: false });
let hostile: Awaited<ReturnType<typeof startHostileServer>>;
let app: App | undefined;

beforeAll(async () => {
  hostile = await startHostileServer();
});
afterAll(async () => {
  await app?.close();
  await hostile?.stop();
});

describe("an MCP tool that changes things", () => {
  it("runs once when its turn is retried after the process died after the effect (the guard keys it by tool call)", async () => {
    const config = loadConfig({
      MONGODB_URI: "mongodb://unused",
      MONGODB_DB: database.dbName,
      // The server runs on this machine: loopback allowed explicitly (docs/mcp.md, "Egress").
      MCP_EGRESS_ALLOW: "127.0.0.0/8",
      MCP_SERVERS: JSON.stringify([
        {
          name: "hostile",
          transport: { kind: "streamable-http", url: hostile.url },
          tools: ["write_record"],
          approvals: { write_record: { require: "never" } },
        },
      ]),
    });
    const faults = crashOnceAt("after-tool-effect");
    app = await createApp(config, { mongoClient: database.client, tools: [], faults });
    const { _id: conversationId } = await app.database.conversations.create(alice.principal);
    const request = { conversationId, caller: alice, content: 'hostile__write_record {"note": "once"}', turnId: randomUUID() };

    await expect(app.runner.run(request)).rejects.toThrow(SimulatedCrash);
    expect(hostile.counters.writes).toBe(1);
    const result = await app.runner.run(request);

    expect(result.answer).toContain("wrote once");
    expect(hostile.counters.writes).toBe(1);
  });
});
