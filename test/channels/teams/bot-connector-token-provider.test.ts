import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  BotConnectorTokenProvider,
  DEFAULT_BOT_CONNECTOR_TENANT,
  DEFAULT_BOT_CONNECTOR_SCOPE,
} from "../../../lib/channels/teams/bot-connector-token-provider.js";
import { ChannelDeliveryError } from "../../../lib/errors.js";
import { startBotConnectorEndpoint, type BotConnectorEndpoint } from "../../support/bot-connector-endpoint.js";

const APP_ID = "00000000-0000-4000-8000-0000000000c1";
const APP_PASSWORD = "token-provider-test-secret";
let entra: BotConnectorEndpoint;

beforeAll(async () => {
  entra = await startBotConnectorEndpoint({ appId: APP_ID, appPassword: APP_PASSWORD });
});
afterAll(() => entra.close());

const provider = (fields: Partial<ConstructorParameters<typeof BotConnectorTokenProvider>[0]> = {}) =>
  new BotConnectorTokenProvider({ appId: APP_ID, appPassword: APP_PASSWORD, tokenUrl: entra.tokenUrl, ...fields });

/** Token requests made while `run` runs. */
async function requestsDuring(run: () => Promise<unknown>): Promise<{ tenant: string; clientId: string; scope: string }[]> {
  const before = entra.tokenRequests.length;
  await run();
  return entra.tokenRequests.slice(before);
}

describe("BotConnectorTokenProvider", () => {
  describe("token", () => {
    it("returns a client-credentials token for the Bot Connector's scope, from the multi-tenant endpoint by default", async () => {
      let token = "";
      const requests = await requestsDuring(async () => (token = await provider().token()));
      expect(token).toMatch(/^test-connector-token-/);
      expect(requests).toEqual([{ tenant: DEFAULT_BOT_CONNECTOR_TENANT, clientId: APP_ID, scope: DEFAULT_BOT_CONNECTOR_SCOPE }]);
    });

    it("asks the bot's own tenant for a single-tenant bot", async () => {
      const requests = await requestsDuring(() => provider({ tenant: "contoso.onmicrosoft.com" }).token());
      expect(requests.map((r) => r.tenant)).toEqual(["contoso.onmicrosoft.com"]);
    });

    it("returns the cached token until the refresh margin before its expiry, then fetches another", async () => {
      // The endpoint's tokens last 3,599 s; with a margin of 599 s one is reused for 3,000 s.
      const tokens = provider({ refreshMarginMs: 599_000 });
      let first = "";
      let second = "";
      let third = "";
      const requests = await requestsDuring(async () => {
        first = await tokens.token(0);
        second = await tokens.token(2_999_999);
        third = await tokens.token(3_000_000);
      });
      expect(second).toBe(first);
      expect(third).not.toBe(first);
      expect(requests).toHaveLength(2);
    });

    it("shares one request between concurrent callers", async () => {
      const tokens = provider();
      let both: string[] = [];
      const requests = await requestsDuring(async () => (both = await Promise.all([tokens.token(0), tokens.token(0)])));
      expect(both[0]).toBe(both[1]);
      expect(requests).toHaveLength(1);
    });

    it("throws ChannelDeliveryError with the status when the endpoint refuses, and asks again on the next call", async () => {
      const refused = provider({ appPassword: "wrong" });
      const error = await refused.token().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ChannelDeliveryError);
      expect(error).toMatchObject({ message: "bot connector token request refused", channel: "teams", status: 401 });
      expect(await requestsDuring(() => refused.token().catch(() => undefined))).toHaveLength(1);
    });

    it("throws ChannelDeliveryError for an unreachable endpoint and for a URL that serves no tokens", async () => {
      await expect(provider({ tokenUrl: "http://127.0.0.1:1/{tenant}/token" }).token()).rejects.toMatchObject({
        message: "bot connector token endpoint unreachable",
      });
      await expect(provider({ scope: "https://graph.microsoft.com/.default", tokenUrl: `${entra.graphUrl}nothing` }).token()).rejects.toBeInstanceOf(
        ChannelDeliveryError,
      );
    });
  });

  describe("invalidate", () => {
    it("drops the cached token, so the next call fetches another", async () => {
      const tokens = provider();
      const first = await tokens.token(0);
      tokens.invalidate();
      expect(await tokens.token(0)).not.toBe(first);
    });
  });
});
