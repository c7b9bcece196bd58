import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { jwtVerify } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { OpenIdKeySource } from "../../lib/auth/open-id-key-source.js";
import { ServiceUnavailableError } from "../../lib/errors.js";
import { BOT_FRAMEWORK_ISSUER, startBotFrameworkIssuer, TEST_APP_ID, type BotFrameworkIssuer } from "../support/teams-signing.js";

let issuer: BotFrameworkIssuer;
/** A metadata server whose next answers the test sets: status and body. */
let metadata: Server;
let metadataUrl: string;
const answers: { status: number; body: unknown }[] = [];

beforeAll(async () => {
  issuer = await startBotFrameworkIssuer();
  metadata = createServer((_req, res) => {
    const answer = answers.shift() ?? { status: 404, body: {} };
    res.writeHead(answer.status, { "content-type": "application/json" }).end(JSON.stringify(answer.body));
  });
  await new Promise<void>((resolve) => metadata.listen(0, "127.0.0.1", resolve));
  metadataUrl = `http://127.0.0.1:${(metadata.address() as AddressInfo).port}/metadata`;
});
afterAll(async () => {
  await issuer.close();
  await new Promise((resolve) => metadata.close(resolve));
});

describe("OpenIdKeySource", () => {
  describe("keys", () => {
    it("returns the key set the metadata names, which verifies the issuer's tokens", async () => {
      const source = new OpenIdKeySource(issuer.openIdMetadataUrl);
      const token = await issuer.sign({ serviceUrl: "https://smba.trafficmanager.net/amer/" });
      const { payload } = await jwtVerify(token, await source.keys(), { issuer: BOT_FRAMEWORK_ISSUER, audience: TEST_APP_ID });
      expect(payload.aud).toBe(TEST_APP_ID);
    });

    it("reads the metadata once for many calls", async () => {
      const before = issuer.fetches.metadata;
      const source = new OpenIdKeySource(issuer.openIdMetadataUrl);
      const first = await source.keys();
      expect(await source.keys()).toBe(first);
      expect(issuer.fetches.metadata - before).toBe(1);
    });

    it("throws ServiceUnavailableError when the metadata cannot be read, and reads it again on the next call", async () => {
      answers.push({ status: 503, body: {} }, { status: 200, body: { jwks_uri: issuer.jwksUrl } });
      const source = new OpenIdKeySource(metadataUrl);
      const error = await source.keys().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ServiceUnavailableError);
      expect(error).toMatchObject({ message: "openid metadata unavailable", cause: expect.any(Error) });
      await expect(source.keys()).resolves.toBeInstanceOf(Function);
    });

    it("throws ServiceUnavailableError for metadata without a jwks_uri", async () => {
      answers.push({ status: 200, body: { issuer: BOT_FRAMEWORK_ISSUER } });
      await expect(new OpenIdKeySource(metadataUrl).keys()).rejects.toMatchObject({
        name: "ServiceUnavailableError",
        message: "openid metadata has no jwks_uri",
      });
    });
  });
});
