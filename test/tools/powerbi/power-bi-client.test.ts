import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { PowerBiEndpoint } from "../../support/powerbi-endpoint.js";
import { MARGIN_BY_MONTH, powerBiClient, startSampleEndpoint, tokenProvider } from "./powerbi-fixture.js";

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
    it("returns rows after waiting out a 429 with Retry-After", async () => {
      const client = powerBiClient(endpoint, tokenProvider(endpoint));
      endpoint.throttle(1, "1");
      const started = Date.now();
      const result = await client.executeQuery(MARGIN_BY_MONTH, { maxRows: 50 });
      expect(result.rows).toHaveLength(18);
      expect(Date.now() - started).toBeGreaterThanOrEqual(950);
      expect(endpoint.queryRequests).toHaveLength(2);
    });

    it("throws a ToolError telling the model to retry later when Retry-After exceeds the wait limit", async () => {
      const client = powerBiClient(endpoint, tokenProvider(endpoint));
      endpoint.throttle(1, "120");
      await expect(client.executeQuery(MARGIN_BY_MONTH, { maxRows: 50 })).rejects.toThrow(/throttling requests; try again in 120 s/);
      expect(endpoint.queryRequests).toHaveLength(1);
    });

    it("renews a revoked token once and succeeds", async () => {
      const tokens = tokenProvider(endpoint);
      const client = powerBiClient(endpoint, tokens);
      await client.executeQuery(MARGIN_BY_MONTH, { maxRows: 50 });
      endpoint.revokeTokens();
      await expect(client.executeQuery(MARGIN_BY_MONTH, { maxRows: 50 })).resolves.toMatchObject({ truncated: false });
      expect(tokens.requests).toBe(2);
    });
  });
});
