import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiPrincipal, slackPrincipal, type Principal } from "../../../lib/auth/principal.js";
import { AthenaQueryEngine, type AthenaAccessRule } from "../../../lib/tools/sql/athena-query-engine.js";
import { buildSalesDatabase } from "../../../lib/tools/sql/sales-dataset.js";
import { createSqlQueryTool } from "../../../lib/tools/sql/sql-query-tool.js";
import { ToolRegistry } from "../../../lib/tools/tool-registry.js";
import { startStsEndpoint, type StsEndpoint } from "../../support/sts-endpoint.js";
import { startAthenaEndpoint, type AthenaEndpoint } from "./athena-endpoint.js";

const WEST_ROLE = "arn:aws:iam::123456789012:role/threadwise-west";
const EMEA_ROLE = "arn:aws:iam::123456789012:role/threadwise-emea";
/** The function's own credentials: what every query was signed with before. */
const FUNCTION_CREDENTIALS = { accessKeyId: "AKIDFUNCTION", secretAccessKey: "example" };
const BY_REGION = "SELECT region, count(*) AS n FROM sales GROUP BY region ORDER BY region";

describe("AthenaQueryEngine, with ATHENA_ACCESS", () => {
  let sts: StsEndpoint;
  let athena: AthenaEndpoint;
  const engines: AthenaQueryEngine[] = [];

  function registryWith(rules: AthenaAccessRule[] | undefined) {
    const engine = new AthenaQueryEngine({
      workgroup: "threadwise",
      database: "sales",
      catalog: "AwsDataCatalog",
      schemaDescription: "",
      region: "us-east-1",
      pollMs: 20,
      ...(rules === undefined
        ? {}
        : {
            access: {
              rules,
              clientConfig: { endpoint: athena.url, maxAttempts: 1 },
              stsClientConfig: { endpoint: sts.url, credentials: FUNCTION_CREDENTIALS },
            },
          }),
    });
    engines.push(engine);
    const registry = new ToolRegistry([createSqlQueryTool({ engine })]);
    return (principal: Principal, roles: string[], sql = BY_REGION) =>
      registry.execute({ id: `call-${Math.random()}`, name: "sql_query", args: { sql } }, { conversationId: "c", turnId: "t", caller: { principal, roles } });
  }

  beforeAll(async () => {
    sts = await startStsEndpoint([WEST_ROLE, EMEA_ROLE]);
    athena = await startAthenaEndpoint(await buildSalesDatabase(), {
      sessionOf: (key) => sts.sessionOf(key),
      rowFilters: { [WEST_ROLE]: ["West"], [EMEA_ROLE]: ["East", "North"] },
    });
  });
  afterAll(async () => {
    await Promise.all(engines.map((e) => e.close()));
    await athena.close();
    await sts.close();
  });

  describe("query", () => {
    const rules = [
      { role: "west-sales", roleArn: WEST_ROLE, workgroup: "west" },
      { role: "*", roleArn: EMEA_ROLE },
    ];

    it("returns two users different rows, each query signed with credentials of a role assumed for that user, tagged with them", async () => {
      const run = registryWith(rules);
      const alice = await run(slackPrincipal("T0ACME", "U0ALICE"), ["west-sales"]);
      const mallory = await run(apiPrincipal("mallory", "globex"), []);
      expect(alice.content).toMatch(/^1 row .*\nregion \| n\nWest \| \d+$/s);
      expect(mallory.content).toMatch(/^2 rows.*\nregion \| n\nEast \| \d+\nNorth \| \d+$/s);

      const [aliceSession, mallorySession] = sts.sessions.slice(-2);
      expect(aliceSession).toMatchObject({
        roleArn: WEST_ROLE,
        signedBy: FUNCTION_CREDENTIALS.accessKeyId,
        tags: { "threadwise-tenant": "slack:T0ACME", "threadwise-role": "west-sales", "threadwise-user": expect.stringMatching(/^[0-9a-f]{32}$/) },
      });
      expect(mallorySession).toMatchObject({ roleArn: EMEA_ROLE, tags: { "threadwise-tenant": "api:globex", "threadwise-role": "any" } });
      expect(aliceSession?.sessionName).not.toBe(mallorySession?.sessionName);

      const starts = athena.calls.filter((c) => c.operation === "StartQueryExecution").slice(-2);
      expect(starts.map((c) => c.accessKeyId)).toEqual([aliceSession?.accessKeyId, mallorySession?.accessKeyId]);
      expect(starts.map((c) => c.body.WorkGroup)).toEqual(["west", "threadwise"]);
    });

    it("reuses a user's session for their next query", async () => {
      const run = registryWith(rules);
      const before = sts.sessions.length;
      await run(slackPrincipal("T0ACME", "U0ALICE"), ["west-sales"]);
      await run(slackPrincipal("T0ACME", "U0ALICE"), ["west-sales"]);
      expect(sts.sessions.length - before).toBe(1);
    });

    it("refuses a caller no rule names, assuming no role", async () => {
      const run = registryWith([{ role: "west-sales", roleArn: WEST_ROLE }]);
      const before = sts.sessions.length;
      const bob = await run(apiPrincipal("bob", "acme"), ["viewer"]);
      expect(bob).toEqual({
        status: "error",
        content: "Error: sql_query: refused: your roles give you no access to the Athena data (ATHENA_ACCESS); ask an administrator for access",
      });
      expect(sts.sessions.length).toBe(before);
    });

    it("is refused by the stand-in when queries are signed with the function's own credentials, as they were before", async () => {
      const { AthenaClient } = await import("@aws-sdk/client-athena");
      const client = new AthenaClient({ region: "us-east-1", endpoint: athena.url, credentials: FUNCTION_CREDENTIALS, maxAttempts: 1 });
      const direct = new AthenaQueryEngine({ client, workgroup: "threadwise", database: "sales", catalog: "AwsDataCatalog", schemaDescription: "" });
      await expect(direct.query(BY_REGION, { maxRows: 10, timeoutMs: 5_000 })).rejects.toMatchObject({ name: "AccessDeniedException" });
      client.destroy();
    });
  });
});
