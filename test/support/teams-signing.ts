import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from "jose";

/** Issuer of the Bot Framework Service's tokens to bots. */
export const BOT_FRAMEWORK_ISSUER = "https://api.botframework.com";
/** The tests' bot registration: its Microsoft App ID is the tokens' audience. */
export const TEST_APP_ID = "00000000-0000-4000-8000-0000000000b0";

export interface SignActivityTokenOptions {
  /** The activity's `serviceUrl`, carried in the `serviceurl` claim as the Bot Framework does. */
  serviceUrl: string;
  /** Default: {@link TEST_APP_ID}. */
  audience?: string;
  /** Default: {@link BOT_FRAMEWORK_ISSUER}. */
  issuer?: string;
  /** Issue time. Default: now. */
  at?: Date;
  /** Lifetime in seconds. Default: 3600. */
  expiresInSeconds?: number;
  /** Sign with a key pair that is not in the published key set (a forged token). */
  foreignKey?: boolean;
  /** Leave the `serviceurl` claim out. */
  omitServiceUrl?: boolean;
}

export interface BotFrameworkIssuer {
  /** The OpenID metadata document, as `https://login.botframework.com/v1/.well-known/openidconfiguration`. */
  openIdMetadataUrl: string;
  jwksUrl: string;
  /** Requests served, to measure caching. */
  fetches: { metadata: number; keys: number };
  sign(options: SignActivityTokenOptions): Promise<string>;
  close(): Promise<void>;
}

/**
 * A stand-in for the Bot Framework's token issuer on loopback: a fresh RSA key pair, its
 * public half published as a JWKS (with the `endorsements` the Bot Framework lists per key)
 * behind an OpenID metadata document, and RS256 tokens signed with it as the Bot Framework
 * signs the requests it sends to bots.
 */
export async function startBotFrameworkIssuer(options: { endorsements?: string[] } = {}): Promise<BotFrameworkIssuer> {
  const trusted = await generateKeyPair("RS256", { extractable: true });
  const foreign = await generateKeyPair("RS256", { extractable: true });
  const kid = "test-signing-key";
  const publicJwk: JWK & { endorsements: string[] } = {
    ...(await exportJWK(trusted.publicKey)),
    kid,
    use: "sig",
    endorsements: options.endorsements ?? ["msteams", "webchat"],
  };
  const fetches = { metadata: 0, keys: 0 };
  let base = "";

  const server = createServer((req, res) => {
    if (req.url === "/v1/.well-known/openidconfiguration") {
      fetches.metadata += 1;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          issuer: BOT_FRAMEWORK_ISSUER,
          authorization_endpoint: "https://invalid.botframework.test",
          jwks_uri: `${base}/v1/.well-known/keys`,
          id_token_signing_alg_values_supported: ["RS256"],
          token_endpoint_auth_methods_supported: ["private_key_jwt"],
        }),
      );
      return;
    }
    if (req.url === "/v1/.well-known/keys") {
      fetches.keys += 1;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ keys: [publicJwk] }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  async function sign(o: SignActivityTokenOptions): Promise<string> {
    const iat = Math.floor((o.at ?? new Date()).getTime() / 1000);
    const key: CryptoKey = o.foreignKey ? foreign.privateKey : trusted.privateKey;
    const claims: Record<string, unknown> = o.omitServiceUrl ? {} : { serviceurl: o.serviceUrl };
    return new SignJWT(claims)
      .setProtectedHeader({ alg: "RS256", typ: "JWT", kid, x5t: kid })
      .setIssuer(o.issuer ?? BOT_FRAMEWORK_ISSUER)
      .setAudience(o.audience ?? TEST_APP_ID)
      .setIssuedAt(iat)
      .setNotBefore(iat)
      .setExpirationTime(iat + (o.expiresInSeconds ?? 3600))
      .sign(key);
  }

  return {
    openIdMetadataUrl: `${base}/v1/.well-known/openidconfiguration`,
    jwksUrl: `${base}/v1/.well-known/keys`,
    fetches,
    sign,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        // Clients keep connections alive; close them so the server stops at once.
        server.closeAllConnections();
      }),
  };
}
