import { ChannelAuthenticationError, ServiceUnavailableError } from "../../../lib/errors.js";
import { verifyBotFrameworkRequest, type VerifyBotFrameworkRequestInput } from "../../../lib/channels/index.js";
import { TEST_APP_ID, startBotFrameworkIssuer, type BotFrameworkIssuer } from "../../support/teams-signing.js";
import { messageActivity } from "./fixtures.js";

const SERVICE_URL = "https://smba.trafficmanager.net/amer/";

async function reasonOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
    return undefined;
  } catch (error) {
    if (error instanceof ChannelAuthenticationError) return error.reason;
    throw error;
  }
}

describe("teams/verify-bot-framework-request", () => {
  let issuer: BotFrameworkIssuer;
  beforeAll(async () => {
    issuer = await startBotFrameworkIssuer();
  });
  afterAll(async () => issuer.close());

  function verify(token: string | undefined, overrides: Partial<VerifyBotFrameworkRequestInput> = {}) {
    return verifyBotFrameworkRequest({
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
      body: messageActivity(SERVICE_URL),
      appId: TEST_APP_ID,
      openIdMetadataUrl: issuer.openIdMetadataUrl,
      ...overrides,
    });
  }

  describe("verifyBotFrameworkRequest", () => {
    it("returns the claims of a token signed as the Bot Framework signs it", async () => {
      const claims = await verify(await issuer.sign({ serviceUrl: SERVICE_URL }));
      expect(claims).toMatchObject({ iss: "https://api.botframework.com", aud: TEST_APP_ID, serviceurl: SERVICE_URL });
    });

    it("throws missing without an Authorization header", async () => {
      expect(await reasonOf(verify(undefined))).toBe("missing");
    });

    it("throws malformed for an Authorization header that is not a bearer token", async () => {
      const token = await issuer.sign({ serviceUrl: SERVICE_URL });
      expect(await reasonOf(verify(undefined, { headers: { authorization: `Basic ${token}` } }))).toBe("malformed");
    });

    it("throws malformed for a bearer value that is not a JWT", async () => {
      expect(await reasonOf(verify("not-a-jwt"))).toBe("malformed");
    });

    it("throws bad_signature for a token whose claims were changed after signing", async () => {
      const [header, payload, signature] = (await issuer.sign({ serviceUrl: SERVICE_URL, audience: "another-bot" })).split(".");
      const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
      const forged = Buffer.from(JSON.stringify({ ...claims, aud: TEST_APP_ID })).toString("base64url");
      expect(await reasonOf(verify(`${header}.${forged}.${signature}`))).toBe("bad_signature");
    });

    it("throws bad_signature for a token signed with a key the metadata does not publish", async () => {
      expect(await reasonOf(verify(await issuer.sign({ serviceUrl: SERVICE_URL, foreignKey: true })))).toBe("bad_signature");
    });

    it("throws expired for a token that expired more than five minutes ago", async () => {
      const token = await issuer.sign({ serviceUrl: SERVICE_URL, at: new Date(Date.now() - 2 * 3600_000), expiresInSeconds: 3600 });
      expect(await reasonOf(verify(token))).toBe("expired");
    });

    it("returns for a token that expired within the five-minute clock tolerance", async () => {
      const token = await issuer.sign({ serviceUrl: SERVICE_URL, at: new Date(Date.now() - 3600_000 - 4 * 60_000), expiresInSeconds: 3600 });
      await expect(verify(token)).resolves.toMatchObject({ aud: TEST_APP_ID });
    });

    it("throws expired when checked at a time after the token's life", async () => {
      const token = await issuer.sign({ serviceUrl: SERVICE_URL });
      expect(await reasonOf(verify(token, { now: new Date(Date.now() + 2 * 3600_000) }))).toBe("expired");
    });

    it("throws wrong_audience for a token issued to another bot", async () => {
      expect(await reasonOf(verify(await issuer.sign({ serviceUrl: SERVICE_URL, audience: "another-bot" })))).toBe("wrong_audience");
    });

    it("throws wrong_issuer for a token from another issuer", async () => {
      const token = await issuer.sign({ serviceUrl: SERVICE_URL, issuer: "https://sts.windows.net/some-tenant/" });
      expect(await reasonOf(verify(token))).toBe("wrong_issuer");
    });

    it("throws wrong_service_url when the token names another serviceUrl than the activity", async () => {
      const token = await issuer.sign({ serviceUrl: "https://attacker.example/" });
      expect(await reasonOf(verify(token))).toBe("wrong_service_url");
    });

    it("throws wrong_service_url when the token carries no serviceurl claim", async () => {
      const token = await issuer.sign({ serviceUrl: SERVICE_URL, omitServiceUrl: true });
      expect(await reasonOf(verify(token))).toBe("wrong_service_url");
    });

    it("throws malformed when the body has no serviceUrl", async () => {
      const token = await issuer.sign({ serviceUrl: SERVICE_URL });
      expect(await reasonOf(verify(token, { body: { type: "message" } }))).toBe("malformed");
    });

    it("throws not_endorsed when the signing key does not endorse the activity's channel", async () => {
      const token = await issuer.sign({ serviceUrl: SERVICE_URL });
      const body = messageActivity(SERVICE_URL, { channelId: "skype" });
      expect(await reasonOf(verify(token, { body }))).toBe("not_endorsed");
    });

    it("fetches the metadata and the keys once for many requests", async () => {
      const own = await startBotFrameworkIssuer();
      try {
        for (let i = 0; i < 10; i += 1) {
          await verifyBotFrameworkRequest({
            headers: { authorization: `Bearer ${await own.sign({ serviceUrl: SERVICE_URL })}` },
            body: messageActivity(SERVICE_URL),
            appId: TEST_APP_ID,
            openIdMetadataUrl: own.openIdMetadataUrl,
          });
        }
        expect(own.fetches).toEqual({ metadata: 1, keys: 1 });
      } finally {
        await own.close();
      }
    });

    it("throws ServiceUnavailableError when the metadata cannot be fetched", async () => {
      const gone = await startBotFrameworkIssuer();
      const url = gone.openIdMetadataUrl;
      const token = await gone.sign({ serviceUrl: SERVICE_URL });
      await gone.close();
      await expect(verify(token, { openIdMetadataUrl: url })).rejects.toBeInstanceOf(ServiceUnavailableError);
    });
  });
});
