import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { exportJWK, generateKeyPair, SignJWT } from "jose";

export interface OidcIssuer {
  /** `http://127.0.0.1:<port>/`: the `iss` of its tokens; its metadata is at `.well-known/openid-configuration` below it. */
  issuer: string;
  /** A token for `sub` with these claims, signed with the published key (or `foreignKey`). */
  sign(sub: string, options?: { audience?: string; claims?: Record<string, unknown>; foreignKey?: boolean }): Promise<string>;
  close(): Promise<void>;
}

/**
 * An identity provider on loopback as API Gateway's JWT authorizer finds one: OpenID metadata at
 * `{issuer}/.well-known/openid-configuration` naming a JWKS with one RSA key, and RS256 tokens.
 */
export async function startOidcIssuer(audience: string): Promise<OidcIssuer> {
  const pair = await generateKeyPair("RS256", { extractable: true });
  const foreign = await generateKeyPair("RS256", { extractable: true });
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: "test-key", use: "sig", alg: "RS256" };
  let issuer = "";
  const server = createServer((req, res) => {
    if (req.url === "/.well-known/openid-configuration") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ issuer, jwks_uri: `${issuer}keys` }));
      return;
    }
    if (req.url === "/keys") {
      res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ keys: [jwk] }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  return {
    issuer,
    sign: (sub, options = {}) =>
      new SignJWT({ ...options.claims })
        .setProtectedHeader({ alg: "RS256", kid: "test-key" })
        .setIssuer(issuer)
        .setAudience(options.audience ?? audience)
        .setSubject(sub)
        .setIssuedAt()
        .setExpirationTime("1h")
        .sign(options.foreignKey ? foreign.privateKey : pair.privateKey),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
