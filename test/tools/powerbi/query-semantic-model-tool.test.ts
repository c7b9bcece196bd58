import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createQuerySemanticModelTool } from "../../../lib/tools/powerbi/query-semantic-model-tool.js";
import { ToolRegistry } from "../../../lib/tools/tool-registry.js";
import { startPowerBiEndpoint, type PowerBiEndpoint } from "../../support/powerbi-endpoint.js";
import { creds, MARGIN_BY_MONTH, powerBiClient, REVENUE_BY_REGION, startSampleEndpoint, tokenProvider } from "./powerbi-fixture.js";
import { apiPrincipal, slackPrincipal, teamsPrincipal, type Principal } from "../../../lib/auth/principal.js";

/** The Entra tenant of the sample workspace; `powerbi-fixture` signs in to it. */
const ENTRA_TENANT = "tenant-1";
const ALICE = apiPrincipal("alice@acme.com", ENTRA_TENANT);
const IDENTITIES = { entraTenantId: ENTRA_TENANT, map: { "slack:T0ACME:U0BOB": "bob@acme.com" } };

describe("query_semantic_model", () => {
  let endpoint: PowerBiEndpoint;

  beforeAll(async () => {
    endpoint = await startSampleEndpoint();
  });
  afterAll(async () => endpoint.close());
  beforeEach(() => {
    endpoint.queryRequests.length = 0;
    endpoint.throttle(0, undefined);
  });

  function setup(overrides: { secretValues?: Record<string, string>; datasetId?: string; maxRows?: number; maxBytes?: number; on?: PowerBiEndpoint } = {}) {
    const on = overrides.on ?? endpoint;
    const tokens = tokenProvider(on, overrides.secretValues ?? creds);
    const client = powerBiClient(on, tokens, overrides.datasetId);
    const tool = createQuerySemanticModelTool({ client, identities: IDENTITIES, maxRows: overrides.maxRows ?? 50, maxBytes: overrides.maxBytes });
    const registry = new ToolRegistry([tool]);
    const run = (dax: string, principal: Principal = ALICE) =>
      registry.execute({ id: "call", name: "query_semantic_model", args: { dax } }, { conversationId: "c", turnId: "t", caller: { principal, roles: [] } });
    return { run };
  }

  describe("run", () => {
    it("returns the measure by month as a table, showing October 2026 margin below September's", async () => {
      const { run } = setup();
      const result = await run(MARGIN_BY_MONTH);
      expect(result.status).toBe("success");
      const lines = result.content.split("\n");
      expect(lines[0]).toBe("18 rows (truncated: no)");
      expect(lines[1]).toBe("Date[Month] | [Gross Margin %]");
      const byMonth = Object.fromEntries(
        lines
          .slice(2)
          .map((l) => l.split(" | "))
          .map(([m, v]) => [m, Number(v)]),
      );
      expect(byMonth["2026-09"]! - byMonth["2026-10"]!).toBeGreaterThan(4);
    });

    it("sends the DAX in the executeQueries body with a bearer token from the client-credentials grant", async () => {
      const { run } = setup();
      await run(MARGIN_BY_MONTH);
      expect(endpoint.queryRequests[0]?.authorization).toMatch(/^Bearer eyJ\./);
      expect(endpoint.queryRequests[0]?.body).toEqual({
        queries: [{ query: MARGIN_BY_MONTH }],
        serializerSettings: { includeNulls: true },
        impersonatedUserName: "alice@acme.com",
      });
    });

    it("returns a truncated table when the result exceeds the row limit", async () => {
      const { run } = setup({ maxRows: 5 });
      const result = await run(MARGIN_BY_MONTH);
      expect(result.content.split("\n")[0]).toMatch(/^5 rows \(truncated: more rows exist/);
    });

    it("returns the service's DAX error message as a tool error", async () => {
      const { run } = setup();
      const result = await run("EVALUATE 'Nope'");
      expect(result).toEqual({
        status: "error",
        content: "Error: query_semantic_model: the DAX query failed: DatasetExecuteQueriesError: Query (1, 10) Cannot find table 'Nope'.",
      });
    });

    it("returns a not-found error for an unknown dataset", async () => {
      const { run } = setup({ datasetId: "missing" });
      const result = await run(MARGIN_BY_MONTH);
      expect(result.status).toBe("error");
      expect(result.content).toMatch(/ItemNotFound/);
    });

    it("returns a sign-in error without the secret when the client secret is wrong", async () => {
      const { run } = setup({ secretValues: { ...creds, powerBiClientSecret: "wrong" } });
      const result = await run(MARGIN_BY_MONTH);
      expect(result.status).toBe("error");
      expect(result.content).toMatch(/could not sign in to Power BI \(invalid_client\)/);
      expect(result.content).not.toContain("wrong");
      expect(result.content).not.toContain("AADSTS");
    });

    it("returns an error naming the secret store when credentials are missing", async () => {
      const { run } = setup({ secretValues: {} });
      expect((await run(MARGIN_BY_MONTH)).content).toMatch(/credentials are not configured in the secret store/);
    });
  });

  describe("run, as the asking user", () => {
    const regions = (content: string) =>
      content
        .split("\n")
        .slice(2)
        .map((line) => line.split(" | ")[0]);

    it("returns an API user of the workspace's tenant and a mapped Slack user different regions, as RLS gives each", async () => {
      const { run } = setup();
      const alice = await run(REVENUE_BY_REGION, ALICE);
      const bob = await run(REVENUE_BY_REGION, slackPrincipal("T0ACME", "U0BOB"));
      expect(regions(alice.content)).toEqual(["West"]);
      expect(regions(bob.content)).toEqual(["East", "North"]);
      expect(endpoint.queryRequests.map((r) => (r.body as { impersonatedUserName: string }).impersonatedUserName)).toEqual(["alice@acme.com", "bob@acme.com"]);
    });

    it("sends a Teams user of the workspace's tenant as their Entra object id", async () => {
      const { run } = setup();
      const objectId = "0f9c3a52-7d1e-4b7a-9c55-2a1b3c4d5e6f";
      await run(REVENUE_BY_REGION, teamsPrincipal(ENTRA_TENANT, objectId));
      expect(endpoint.queryRequests[0]?.body).toMatchObject({ impersonatedUserName: objectId });
    });

    it.each([
      ["a Slack user without a mapping", slackPrincipal("T0ACME", "U0MALLORY"), "your Slack account", "slack:T0ACME:U0MALLORY"],
      ["an API user of another tenant", apiPrincipal("mallory@globex.com", "globex"), "your API identity", "api:globex:mallory@globex.com"],
      ["an API user without a tenant", apiPrincipal("mallory"), "your API identity", "api::mallory"],
      ["a Teams user of another Entra tenant", teamsPrincipal("tenant-2", "0f9c3a52-7d1e-4b7a-9c55-2a1b3c4d5e6f"), "your Teams account", "teams:tenant-2:"],
    ])("returns a refusal naming the mapping, and queries nothing, for %s", async (_name, principal, who, key) => {
      const { run } = setup();
      const result = await run(REVENUE_BY_REGION, principal);
      expect(result.status).toBe("error");
      expect(result.content).toContain(`refused: ${who} is not mapped to a Power BI user`);
      expect(result.content).toContain(`POWERBI_IDENTITY_MAP under "${key}`);
      expect(endpoint.queryRequests).toHaveLength(0);
    });
  });

  describe("run, against a service that answers more than asked", () => {
    const DISTINCT_COLUMNS = "EVALUATE 'Distinct columns'";
    const LONG_VALUES = "EVALUATE 'Long values'";
    let hostile: PowerBiEndpoint;

    beforeAll(async () => {
      hostile = await startPowerBiEndpoint({
        tenantId: "tenant-1",
        clientId: creds.powerBiClientId,
        clientSecret: creds.powerBiClientSecret,
        groupId: "group-1",
        datasetId: "dataset-1",
        queries: {
          // Every row names a column of its own: a table of all of them would be rows × 2,000 cells.
          [DISTINCT_COLUMNS]: Array.from({ length: 2_000 }, (_, i) => ({ [`T[c${i}]`]: i })),
          [LONG_VALUES]: Array.from({ length: 200 }, (_, i) => ({ "T[k]": i, "T[text]": "x".repeat(10_000) })),
        },
      });
    });
    afterAll(async () => hostile.close());

    it("returns only the columns of the rows it shows, so 2,000 rows of a column each give a 50-column table at 50 rows", async () => {
      const { run } = setup({ on: hostile, maxRows: 50 });
      const result = await run(DISTINCT_COLUMNS);
      const lines = result.content.split("\n");
      expect(lines[0]).toMatch(/^50 rows \(truncated: more rows exist beyond the 50-row limit/);
      expect(lines[1]!.split(" | ")).toHaveLength(50);
      expect(lines[2]).toBe(["0", ...Array(49).fill("NULL")].join(" | "));
    });

    it("cuts rows off at maxBytes of values, as sql_query does (text by length, a number 8)", async () => {
      const { run } = setup({ on: hostile, maxRows: 200, maxBytes: 100_000 });
      const result = await run(LONG_VALUES);
      // Each row is 10,008 bytes: 9 rows fit in 100,000, the 10th does not.
      expect(result.content.split("\n")[0]).toBe(
        "9 rows (truncated: more rows exist beyond the result size limit; select fewer or shorter columns, or aggregate)",
      );
    });

    it("counts a missing or null cell as 8 bytes, so a wide table of nulls is cut by maxBytes too", async () => {
      const { run } = setup({ on: hostile, maxRows: 200, maxBytes: 100_000 });
      const result = await run(DISTINCT_COLUMNS);
      // n rows of n columns cost 8·n² bytes: 111 rows fit in 100,000.
      expect(result.content.split("\n")[0]).toMatch(/^111 rows \(truncated: more rows exist beyond the result size limit/);
    });
  });
});
