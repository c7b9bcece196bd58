import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "../../support/api-client.js";

/** The local model calls `tool {json}` written in the question and quotes the tool's output in its answer. */
async function ask(t: TestServer, token: string, content: string): Promise<string> {
  const id = (await t.call("POST", "/v1/conversations", { token })).body.conversationId as string;
  const asked = await t.call("POST", `/v1/conversations/${id}/messages`, { token, json: { content } });
  expect(asked.status).toBe(200);
  return asked.body.answer as string;
}

const BY_REGION = 'sql_query {"sql": "SELECT region, count(*) AS n FROM sales GROUP BY region ORDER BY region"}';
/** Reads the base tables, not the view: the filter is in the data the engine holds, not in a view the SQL could go around. */
const CUSTOMERS = 'sql_query {"sql": "SELECT r.name, count(*) FROM customers c JOIN regions r USING (region_id) GROUP BY r.name ORDER BY r.name"}';

describe("RowScopedQueryEngine", () => {
  let t: TestServer;

  beforeAll(async () => {
    t = await startTestServer({ SQL_ROW_POLICY: JSON.stringify({ "west-sales": ["West"], emea: ["East", "North"], analyst: "*" }) });
  }, 60_000);
  afterAll(async () => t?.close());

  describe("query, through the HTTP API", () => {
    it("returns two users of different tenants and roles different rows for the same SQL", async () => {
      const alice = await ask(t, await t.token("alice", { tenant: "acme", roles: ["west-sales"] }), BY_REGION);
      const mallory = await ask(t, await t.token("mallory", { tenant: "globex", roles: ["emea"] }), BY_REGION);
      expect(alice).toMatch(/West \| \d+/);
      expect(alice).not.toMatch(/(East|North|South|Central) \| \d+/);
      expect(mallory).toMatch(/East \| \d+/);
      expect(mallory).toMatch(/North \| \d+/);
      expect(mallory).not.toMatch(/(West|South|Central) \| \d+/);
      expect(alice).toContain("Rows limited to the West region by your access (SQL_ROW_POLICY)");
    });

    it("returns the base tables filtered too", async () => {
      const alice = await ask(t, await t.token("alice", { tenant: "acme", roles: ["west-sales"] }), CUSTOMERS);
      expect(alice).toMatch(/West \| \d+/);
      expect(alice).not.toMatch(/(East|North|South|Central) \| \d+/);
    });

    it("returns every region to a role the policy gives all of them, with no notice", async () => {
      const analyst = await ask(t, await t.token("ann", { tenant: "acme", roles: ["analyst"] }), BY_REGION);
      expect(analyst.match(/(Central|East|North|South|West) \| \d+/g)).toHaveLength(5);
      expect(analyst).not.toContain("Rows limited");
    });

    it("refuses a caller whose roles give no region, saying why", async () => {
      const bob = await ask(t, await t.token("bob", { tenant: "acme" }), BY_REGION);
      expect(bob).toContain("refused: your roles give you no rows of the sales database (SQL_ROW_POLICY)");
    });
  });
});
