import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { ToolError } from "../../../lib/errors.js";
import { PowerBiClient } from "../../../lib/tools/powerbi/power-bi-client.js";
import type { PowerBiEndpoint } from "../../support/powerbi-endpoint.js";
import { MARGIN_BY_MONTH, powerBiClient, REVENUE_BY_REGION, startSampleEndpoint, tokenProvider } from "./powerbi-fixture.js";

const AS_ALICE = { userName: "alice@acme.com" };

describe("PowerBiClient", () => {
  let endpoint: PowerBiEndpoint;

  beforeAll(async () => {
    endpoint = await startSampleEndpoint();
  });
  afterAll(async () => endpoint.close());
  beforeEach(() => {
    endpoint.queryRequests.length = 0;
    endpoint.throttle(0, undefined);
  });

  describe("executeQuery", () => {
    it("sends the user the query runs as in the body's impersonatedUserName, and returns the rows RLS leaves that user", async () => {
      const client = powerBiClient(endpoint, tokenProvider(endpoint));
      const alice = await client.executeQuery(REVENUE_BY_REGION, { maxRows: 50 }, AS_ALICE);
      const bob = await client.executeQuery(REVENUE_BY_REGION, { maxRows: 50 }, { userName: "bob@acme.com" });
      expect(endpoint.queryRequests.map((r) => (r.body as { impersonatedUserName?: string }).impersonatedUserName)).toEqual(["alice@acme.com", "bob@acme.com"]);
      expect(alice.rows.map((r) => r[0])).toEqual(["West"]);
      expect(bob.rows.map((r) => r[0])).toEqual(["East", "North"]);
    });

    it("throws a ToolError without sending a request when no user is given", async () => {
      const client = powerBiClient(endpoint, tokenProvider(endpoint));
      await expect(client.executeQuery(REVENUE_BY_REGION, { maxRows: 50 }, { userName: "" })).rejects.toThrow(/needs the asking user's identity/);
      expect(endpoint.queryRequests).toHaveLength(0);
    });

    it("returns rows after waiting out a 429 with Retry-After", async () => {
      const client = powerBiClient(endpoint, tokenProvider(endpoint));
      endpoint.throttle(1, "1");
      const started = Date.now();
      const result = await client.executeQuery(MARGIN_BY_MONTH, { maxRows: 50 }, AS_ALICE);
      expect(result.rows).toHaveLength(18);
      expect(Date.now() - started).toBeGreaterThanOrEqual(950);
      expect(endpoint.queryRequests).toHaveLength(2);
    });

    it("throws a ToolError telling the model to retry later when Retry-After exceeds the wait limit", async () => {
      const client = powerBiClient(endpoint, tokenProvider(endpoint));
      endpoint.throttle(1, "120");
      await expect(client.executeQuery(MARGIN_BY_MONTH, { maxRows: 50 }, AS_ALICE)).rejects.toThrow(/throttling requests; try again in 120 s/);
      expect(endpoint.queryRequests).toHaveLength(1);
    });

    it("renews a revoked token once and succeeds", async () => {
      const tokens = tokenProvider(endpoint);
      const client = powerBiClient(endpoint, tokens);
      await client.executeQuery(MARGIN_BY_MONTH, { maxRows: 50 }, AS_ALICE);
      endpoint.revokeTokens();
      await expect(client.executeQuery(MARGIN_BY_MONTH, { maxRows: 50 }, AS_ALICE)).resolves.toMatchObject({ truncated: false });
      expect(tokens.requests).toBe(2);
    });
  });

  describe("executeQuery, against a service that answers too much", () => {
    it("throws a ToolError, reading no further, when the declared body is over maxResponseBytes", async () => {
      const client = new PowerBiClient({
        apiUrl: endpoint.apiUrl,
        groupId: "group-1",
        datasetId: "dataset-1",
        tokens: tokenProvider(endpoint),
        maxResponseBytes: 500,
      });
      const error = await client.executeQuery(MARGIN_BY_MONTH, { maxRows: 50 }, AS_ALICE).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ToolError);
      expect((error as Error).message).toBe("Power BI answered more than 500 bytes; ask for fewer rows or columns (TOPN, SUMMARIZECOLUMNS)");
    });

    it("stops reading an endless body without a length at maxResponseBytes and throws a ToolError", async () => {
      const endless = createServer((_req, res) => {
        res.writeHead(200, { "content-type": "application/json" });
        const chunk = Buffer.alloc(64 * 1024, " ");
        res.write('{"results": [');
        const more = () => {
          while (!res.destroyed && res.write(chunk));
          if (!res.destroyed) res.once("drain", more);
        };
        more();
      });
      await new Promise<void>((resolve) => endless.listen(0, "127.0.0.1", resolve));
      try {
        const apiUrl = `http://127.0.0.1:${(endless.address() as AddressInfo).port}/v1.0/myorg`;
        const client = new PowerBiClient({ apiUrl, groupId: "group-1", datasetId: "dataset-1", tokens: tokenProvider(endpoint), maxResponseBytes: 1_000_000 });
        await expect(client.executeQuery(MARGIN_BY_MONTH, { maxRows: 50 }, AS_ALICE)).rejects.toThrow(/^Power BI answered more than 1000000 bytes/);
      } finally {
        endless.closeAllConnections();
        await new Promise((resolve) => endless.close(resolve));
      }
    });
  });
});
