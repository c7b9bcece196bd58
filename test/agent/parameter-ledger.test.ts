import { randomUUID } from "node:crypto";
import { beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import type { App } from "../../lib/app.js";
import { apiPrincipal, type Caller } from "../../lib/auth/index.js";
import { PARAMETER_LEDGER_HEADING } from "../../lib/model-view/index.js";
import type { ToolDefinition } from "../../lib/tools/index.js";
import { useTestApp } from "../support/app-fixture.js";

/** A query tool that answers any SQL with one row: what matters here is the filter its call resolved. */
const salesQuery: ToolDefinition = {
  name: "sales_query",
  description: "Runs a SQL query on the sales data.",
  schema: z.object({ sql: z.string() }),
  sideEffects: false,
  run: async () => "1 row (truncated: no)\nrevenue\n4926051.05",
};

const alice: Caller = { principal: apiPrincipal("alice"), roles: [] };
const testApp = useTestApp("parameter_ledger", { clearBeforeEach: false });
let app: App;

beforeAll(async () => {
  // The product's defaults: 6 finished turns in blocks of 6, archived 6 at a time, the ledger on.
  app = await testApp.appWith({ tools: [salesQuery] });
});

const ANCHOR = "month = '2026-10'";

describe("the ledger of time anchors, on the turn path", () => {
  it("shows a time anchor an archived turn resolved in the view 30 turns later, and nowhere but the system part", async () => {
    const { _id: conversationId } = await app.database.conversations.create(alice.principal);
    const say = async (content: string) => {
      const turnId = randomUUID();
      expect((await app.runner.run({ conversationId, caller: alice, content, turnId })).status).toBe("completed");
      return turnId;
    };
    await say("Hello, let's look at East.");
    // Turn 2: "last month" resolved to October 2026 by the query's filter.
    await say(`How did East do last month? sales_query {"sql": "SELECT sum(revenue) FROM sales WHERE region = 'East' AND ${ANCHOR}"}`);
    for (let t = 3; t <= 32; t++) await say(`Turn ${t}: how are you?`);

    const { archivedTurns, messages } = await app.runner.readWorkingSet(conversationId);
    expect(archivedTurns).toBeGreaterThanOrEqual(2);
    expect(messages.some((m) => JSON.stringify(m).includes("2026-10"))).toBe(false);
    const turnId = await say("Break the last month figure down by channel.");
    const view = (await app.database.turns.getWithCalls(turnId))?.calls[0].view ?? [];
    expect(view[0].role).toBe("system");
    expect(view[0].content).toContain(`${PARAMETER_LEDGER_HEADING}\n- turn 2: ${ANCHOR}`);
    expect(view.slice(1).some((m) => JSON.stringify(m).includes("2026-10"))).toBe(false);
  });
});
