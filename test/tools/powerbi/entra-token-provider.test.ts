import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ToolError } from "../../../lib/errors.js";
import type { PowerBiEndpoint } from "../../support/powerbi-endpoint.js";
import { creds, startSampleEndpoint, tokenProvider } from "./powerbi-fixture.js";

describe("EntraTokenProvider", () => {
  let endpoint: PowerBiEndpoint;

  beforeAll(async () => {
    endpoint = await startSampleEndpoint();
  });
  afterAll(async () => endpoint.close());

  describe("getToken", () => {
    it("returns the cached token until it expires", async () => {
      const tokens = tokenProvider(endpoint);
      const first = await tokens.getToken();
      expect(await tokens.getToken()).toBe(first);
      expect(tokens.requests).toBe(1);
    });

    it("returns one token to concurrent callers with one request", async () => {
      const tokens = tokenProvider(endpoint);
      const all = await Promise.all([tokens.getToken(), tokens.getToken(), tokens.getToken()]);
      expect(new Set(all).size).toBe(1);
      expect(tokens.requests).toBe(1);
    });

    it("returns the token to a concurrent caller when the caller whose call started the request gives up", async () => {
      const tokens = tokenProvider(endpoint);
      const giving = new AbortController();
      const first = tokens.getToken(giving.signal);
      const second = tokens.getToken();
      giving.abort();
      await expect(first).rejects.toThrow();
      await expect(second).resolves.toMatch(/^eyJ\./);
      expect(tokens.requests).toBe(1);
    });

    it("returns a new token once the cached one is within the expiry skew", async () => {
      const tokens = tokenProvider(endpoint, creds, 3_599_000);
      const first = await tokens.getToken();
      expect(await tokens.getToken()).not.toBe(first);
    });

    it("throws a ToolError when the secret store lacks the client id", async () => {
      const tokens = tokenProvider(endpoint, { powerBiClientSecret: "x" });
      await expect(tokens.getToken()).rejects.toBeInstanceOf(ToolError);
    });
  });
});
