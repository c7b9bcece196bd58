import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey, type JWK } from "jose";

/** Issuer of the Bot Framework Service's tokens to bots. */
export const BOT_FRAMEWORK_ISSUER = "https://api.botframework.com";
/** The tests' bot registration: its Microsoft App ID is the tokens' audience. */
export const TEST_APP_ID = "00000000-0000-4000-8000-0000000000b0";

/** Key id of the issuer's first published key, which signs unless a token names another. */
export const TEST_SIGNING_KEY_ID = "test-signing-key";

export interface SignActivityTokenOptions {
  /** The activity's `serviceUrl`, carried in the `serviceurl` claim as the Bot Framework does. */
  serviceUrl: string;
  /** The claim that carries it. Default: `serviceurl`, as the tokens have it; the prose writes `serviceUrl`. */
  serviceUrlClaim?: "serviceurl" | "serviceUrl";
  /** Leave the `serviceurl` claim out. */
  omitServiceUrl?: boolean;
  /** More claims, set after the others (so they may override them). */
  claims?: Record<string, unknown>;
  /** Default: {@link TEST_APP_ID}. */
  audience?: string;
  /** Default: {@link BOT_FRAMEWORK_ISSUER}. */
  issuer?: string;
  /** Issue time, and `nbf` unless `notBefore` is given. Default: now. */
  at?: Date;
  /** Default: the issue time. */
  notBefore?: Date;
  /** Lifetime in seconds. Default: 3600. */
  expiresInSeconds?: number;
  /** Leave the `exp` claim out: a token that never expires. */
  omitExpiry?: boolean;
  /** Which published key signs, and the `kid` in the header. Default: {@link TEST_SIGNING_KEY_ID}. */
  keyId?: string;
  /** Leave `kid` (and `x5t`) out of the header, so no published key is named. */
  omitKeyId?: boolean;
  /** Sign with a key pair that is not in the published key set (a forged token), under the header's `kid`. */
  foreignKey?: boolean;
  /** Sign with HS256 and a secret of the attacker's choosing, the algorithm-confusion attack. */
  hmacSecret?: Uint8Array;
  /** A critical header parameter (`crit`) the verifier does not know. */
  criticalHeader?: string;
}

/** One key of the published set. */
export interface PublishedKeyOptions {
  kid: string;
  /** The channels the key signs for, as the Bot Framework lists them; `null` leaves the field out. Default: msteams and webchat. */
  endorsements?: string[] | null;
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
 * A stand-in for the Bot Framework's token issuer on loopback: fresh RSA key pairs, their public
 * halves published as a JWKS (with the `endorsements` the Bot Framework lists per key) behind an
 * OpenID metadata document, and RS256 tokens signed with them as the Bot Framework signs the
 * requests it sends to bots. Its options also make the tokens a verifier must refuse.
 */
export async function startBotFrameworkIssuer(
  options: {
    keys?: PublishedKeyOptions[];
    /** Serve the metadata but answer 503 for the key set. */
    keysUnavailable?: boolean;
  } = {},
): Promise<BotFrameworkIssuer> {
  const published = options.keys ?? [{ kid: TEST_SIGNING_KEY_ID }];
  const pairs = new Map<string, CryptoKeyPair>();
  const jwks: JWK[] = [];
  for (const { kid, endorsements } of published) {
    const pair = await generateKeyPair("RS256", { extractable: true });
    pairs.set(kid, pair);
    const jwk: JWK & { endorsements?: string[] } = { ...(await exportJWK(pair.publicKey)), kid, use: "sig" };
    if (endorsements !== null) jwk.endorsements = endorsements ?? ["msteams", "webchat"];
    jwks.push(jwk);
  }
  const foreign = await generateKeyPair("RS256", { extractable: true });
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
      if (options.keysUnavailable) {
        res.writeHead(503).end();
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ keys: jwks }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  async function sign(o: SignActivityTokenOptions): Promise<string> {
    const iat = Math.floor((o.at ?? new Date()).getTime() / 1000);
    const kid = o.keyId ?? published[0]!.kid;
    const claims: Record<string, unknown> = o.omitServiceUrl ? {} : { [o.serviceUrlClaim ?? "serviceurl"]: o.serviceUrl };
    const jwt = new SignJWT({ ...claims, ...o.claims })
      .setIssuer(o.issuer ?? BOT_FRAMEWORK_ISSUER)
      .setAudience(o.audience ?? TEST_APP_ID)
      .setIssuedAt(iat)
      .setNotBefore(o.notBefore ? Math.floor(o.notBefore.getTime() / 1000) : iat);
    if (!o.omitExpiry) jwt.setExpirationTime(iat + (o.expiresInSeconds ?? 3600));
    if (o.hmacSecret) return jwt.setProtectedHeader({ alg: "HS256", typ: "JWT", kid }).sign(o.hmacSecret);
    const critical = o.criticalHeader ? { crit: [o.criticalHeader], [o.criticalHeader]: true } : {};
    jwt.setProtectedHeader({ alg: "RS256", typ: "JWT", ...(o.omitKeyId ? {} : { kid, x5t: kid }), ...critical });
    const key: CryptoKey = o.foreignKey ? foreign.privateKey : (pairs.get(kid) ?? foreign).privateKey;
    return jwt.sign(key, o.criticalHeader ? { crit: { [o.criticalHeader]: true } } : undefined);
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
