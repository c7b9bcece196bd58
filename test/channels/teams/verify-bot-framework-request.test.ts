import { ChannelAuthenticationError, ServiceUnavailableError } from "../../../lib/errors.js";
import { errors } from "jose";
import {
  DEFAULT_BOT_FRAMEWORK_ISSUER,
  DEFAULT_BOT_FRAMEWORK_OPENID_METADATA_URL,
  verifyBotFrameworkRequest,
  type VerifyBotFrameworkRequestInput,
} from "../../../lib/channels/index.js";
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

    it("throws wrong_channel for an activity of another Bot Framework channel, even one the signing key endorses", async () => {
      const token = await issuer.sign({ serviceUrl: SERVICE_URL });
      for (const channelId of ["webchat", "directline", "skype", "emulator", "MSTEAMS", ""]) {
        expect(await reasonOf(verify(token, { body: messageActivity(SERVICE_URL, { channelId }) }))).toBe("wrong_channel");
      }
    });

    it("throws wrong_channel for an activity without channelId, which would otherwise ask no key to endorse it", async () => {
      const { channelId: _omitted, ...body } = messageActivity(SERVICE_URL);
      expect(await reasonOf(verify(await issuer.sign({ serviceUrl: SERVICE_URL }), { body }))).toBe("wrong_channel");
    });

    it("throws wrong_service_url for a signed serviceUrl that is no Teams Bot Connector (a Direct Line or Web Chat one)", async () => {
      for (const serviceUrl of [
        "https://directline.botframework.com/",
        "https://webchat.botframework.com/",
        "http://smba.trafficmanager.net/amer/",
        "https://smba.trafficmanager.net.evil.example/amer/",
        "https://smba.trafficmanager.net:8443/amer/",
      ]) {
        const token = await issuer.sign({ serviceUrl });
        expect(await reasonOf(verify(token, { body: messageActivity(serviceUrl) }))).toBe("wrong_service_url");
      }
    });

    it("returns for the government clouds' Bot Connectors, and for a stand-in's origin when one is given", async () => {
      const gcc = "https://smba.infra.gcc.teams.microsoft.com/";
      await expect(verify(await issuer.sign({ serviceUrl: gcc }), { body: messageActivity(gcc) })).resolves.toMatchObject({ aud: TEST_APP_ID });
      const local = "http://127.0.0.1:4321/";
      const token = await issuer.sign({ serviceUrl: local });
      expect(await reasonOf(verify(token, { body: messageActivity(local) }))).toBe("wrong_service_url");
      await expect(verify(token, { body: messageActivity(local), serviceUrlOrigin: "http://127.0.0.1:4321" })).resolves.toMatchObject({ aud: TEST_APP_ID });
      expect(await reasonOf(verify(await issuer.sign({ serviceUrl: SERVICE_URL }), { serviceUrlOrigin: "http://127.0.0.1:4321" }))).toBe("wrong_service_url");
    });

    it("returns the claims of a token that carries the claim as serviceUrl, as the prose spells it", async () => {
      const claims = await verify(await issuer.sign({ serviceUrl: SERVICE_URL, serviceUrlClaim: "serviceUrl" }));
      expect(claims).toMatchObject({ serviceUrl: SERVICE_URL });
    });

    it.each([
      ["lower-case bearer", (t: string) => `bearer ${t}`],
      ["spaces around it", (t: string) => `  Bearer  ${t}  `],
    ])("returns for an Authorization header with %s", async (_, header) => {
      const token = await issuer.sign({ serviceUrl: SERVICE_URL });
      await expect(verify(undefined, { headers: { authorization: header(token) } })).resolves.toMatchObject({ aud: TEST_APP_ID });
    });

    it.each([
      ["another scheme", (t: string) => `Basic ${t}`],
      ["a scheme that only ends in Bearer", (t: string) => `XBearer ${t}`],
      ["more after the token", (t: string) => `Bearer ${t} ${t}`],
    ])("throws malformed for an Authorization header with %s", async (_, header) => {
      const token = await issuer.sign({ serviceUrl: SERVICE_URL });
      expect(await reasonOf(verify(undefined, { headers: { authorization: header(token) } }))).toBe("malformed");
    });

    it("throws malformed for a token without exp, which would never expire", async () => {
      expect(await reasonOf(verify(await issuer.sign({ serviceUrl: SERVICE_URL, omitExpiry: true })))).toBe("malformed");
    });

    it("throws expired for a token not valid until more than five minutes from now", async () => {
      const token = await issuer.sign({ serviceUrl: SERVICE_URL, notBefore: new Date(Date.now() + 10 * 60_000) });
      expect(await reasonOf(verify(token))).toBe("expired");
    });

    it("returns for a token valid from a time within the clock tolerance", async () => {
      const token = await issuer.sign({ serviceUrl: SERVICE_URL, notBefore: new Date(Date.now() + 2 * 60_000) });
      await expect(verify(token)).resolves.toMatchObject({ aud: TEST_APP_ID });
    });

    it("throws expired for a token that expired within the default tolerance but outside the one given", async () => {
      const token = await issuer.sign({ serviceUrl: SERVICE_URL, at: new Date(Date.now() - 3600_000 - 2 * 60_000), expiresInSeconds: 3600 });
      expect(await reasonOf(verify(token, { clockToleranceSeconds: 60 }))).toBe("expired");
    });

    it("returns for a token from the issuer given instead of the Bot Framework's", async () => {
      const token = await issuer.sign({ serviceUrl: SERVICE_URL, issuer: "https://sts.example/bots" });
      await expect(verify(token, { issuer: "https://sts.example/bots" })).resolves.toMatchObject({ iss: "https://sts.example/bots" });
    });

    it("throws malformed for an HS256 token, whatever secret signed it (algorithm confusion)", async () => {
      const token = await issuer.sign({ serviceUrl: SERVICE_URL, hmacSecret: new TextEncoder().encode("a secret the attacker chose, 32+ bytes") });
      expect(await reasonOf(verify(token))).toBe("malformed");
    });

    it("throws malformed for a token with a critical header parameter the verifier does not know", async () => {
      expect(await reasonOf(verify(await issuer.sign({ serviceUrl: SERVICE_URL, criticalHeader: "urn:example:must-understand" })))).toBe("malformed");
    });

    it("throws bad_signature for a token whose kid the key set does not publish", async () => {
      expect(await reasonOf(verify(await issuer.sign({ serviceUrl: SERVICE_URL, keyId: "unpublished-key" })))).toBe("bad_signature");
    });

    it("throws malformed when the activity's serviceUrl is empty", async () => {
      const token = await issuer.sign({ serviceUrl: "" });
      expect(await reasonOf(verify(token, { body: messageActivity("") }))).toBe("malformed");
    });

    describe("with a key set of several keys", () => {
      let keys: BotFrameworkIssuer;
      beforeAll(async () => {
        keys = await startBotFrameworkIssuer({
          keys: [
            { kid: "teams-key", endorsements: ["msteams"] },
            { kid: "webchat-key", endorsements: ["webchat"] },
            { kid: "bare-key", endorsements: null },
          ],
        });
      });
      afterAll(async () => keys.close());

      const signedBy = (keyId: string) => keys.sign({ serviceUrl: SERVICE_URL, keyId });
      const withKeys = (token: string, channelId?: string) =>
        verify(token, { openIdMetadataUrl: keys.openIdMetadataUrl, body: messageActivity(SERVICE_URL, { channelId }) });

      it("returns when the key that signed endorses msteams", async () => {
        await expect(withKeys(await signedBy("teams-key"), "msteams")).resolves.toMatchObject({ aud: TEST_APP_ID });
      });

      it("throws not_endorsed when another key of the set endorses msteams but not the one that signed", async () => {
        expect(await reasonOf(withKeys(await signedBy("webchat-key"), "msteams"))).toBe("not_endorsed");
      });

      it("throws not_endorsed when the signing key lists no endorsements", async () => {
        expect(await reasonOf(withKeys(await signedBy("bare-key"), "msteams"))).toBe("not_endorsed");
      });
    });

    it("throws bad_signature when the key set publishes two keys under the token's kid", async () => {
      const twins = await startBotFrameworkIssuer({ keys: [{ kid: "rotated" }, { kid: "rotated" }] });
      try {
        const token = await twins.sign({ serviceUrl: SERVICE_URL });
        expect(await reasonOf(verify(token, { openIdMetadataUrl: twins.openIdMetadataUrl }))).toBe("bad_signature");
      } finally {
        await twins.close();
      }
    });

    it("throws not_endorsed for a token without kid, whose signing key cannot be named", async () => {
      expect(await reasonOf(verify(await issuer.sign({ serviceUrl: SERVICE_URL, omitKeyId: true })))).toBe("not_endorsed");
    });

    it.each([
      ["missing", async () => verify(undefined), "authorization header missing", false],
      ["malformed", async () => verify(undefined, { headers: { authorization: "Basic x" } }), "authorization is not a bearer token", false],
      ["malformed", async () => verify(await issuer.sign({ serviceUrl: SERVICE_URL }), { body: {} }), "activity has no serviceUrl", false],
      ["malformed", async () => verify("not-a-jwt"), "bot framework token malformed", true],
      ["malformed", async () => verify(await issuer.sign({ serviceUrl: SERVICE_URL, omitExpiry: true })), "bot framework token claim invalid", true],
      [
        "expired",
        async () => verify(await issuer.sign({ serviceUrl: SERVICE_URL }), { now: new Date(Date.now() + 3 * 3600_000) }),
        "bot framework token expired",
        true,
      ],
      [
        "expired",
        async () => verify(await issuer.sign({ serviceUrl: SERVICE_URL, notBefore: new Date(Date.now() + 3600_000) })),
        "bot framework token not yet valid",
        true,
      ],
      [
        "wrong_issuer",
        async () => verify(await issuer.sign({ serviceUrl: SERVICE_URL, issuer: "https://elsewhere" })),
        "bot framework token issuer mismatch",
        true,
      ],
      ["wrong_audience", async () => verify(await issuer.sign({ serviceUrl: SERVICE_URL, audience: "bot-b" })), "bot framework token audience mismatch", true],
      ["bad_signature", async () => verify(await issuer.sign({ serviceUrl: SERVICE_URL, foreignKey: true })), "bot framework token signature invalid", true],
      ["wrong_service_url", async () => verify(await issuer.sign({ serviceUrl: "https://elsewhere/" })), "token serviceUrl does not match the activity", false],
      [
        "wrong_channel",
        async () => verify(await issuer.sign({ serviceUrl: SERVICE_URL }), { body: messageActivity(SERVICE_URL, { channelId: "skype" }) }),
        "activity is not from Teams",
        false,
      ],
    ])("throws %s with a message that says which check failed, for the logs (%s)", async (reason, attempt, message, fromJose) => {
      const error = await attempt().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(ChannelAuthenticationError);
      expect(error).toMatchObject({ reason, message });
      // The jose error that decided is kept as the cause, for the logs.
      if (fromJose) expect((error as Error).cause).toBeInstanceOf(errors.JOSEError);
    });

    it("throws ServiceUnavailableError, keeping the cause, when the key set cannot be fetched", async () => {
      const broken = await startBotFrameworkIssuer({ keysUnavailable: true });
      try {
        const token = await broken.sign({ serviceUrl: SERVICE_URL });
        const error = await verify(token, { openIdMetadataUrl: broken.openIdMetadataUrl }).catch((e: unknown) => e);
        expect(error).toBeInstanceOf(ServiceUnavailableError);
        expect(error).toMatchObject({ message: "bot framework signing keys unavailable", cause: expect.any(Error) });
      } finally {
        await broken.close();
      }
    });

    it("defaults to the Bot Framework's published metadata and issuer", () => {
      expect(DEFAULT_BOT_FRAMEWORK_OPENID_METADATA_URL).toBe("https://login.botframework.com/v1/.well-known/openidconfiguration");
      expect(DEFAULT_BOT_FRAMEWORK_ISSUER).toBe("https://api.botframework.com");
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
