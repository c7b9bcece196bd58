import { generateKeyPair, SignJWT } from "jose";
import { beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_CLOCK_TOLERANCE_S, JwtVerifier } from "../../lib/auth/jwt-verifier.js";
import { OpenIdKeySource } from "../../lib/auth/open-id-key-source.js";
import { AuthenticationError, ServiceUnavailableError } from "../../lib/errors.js";
import { startOidcIssuer } from "../support/oidc-issuer.js";

let verifier: JwtVerifier;
let sign: (claims: Record<string, unknown>, subject?: string) => Promise<string>;
/** A token for alice whose `exp` and `nbf` are these many seconds from now. */
let signAt: (times: { expiresInS: number; notBeforeInS?: number }) => Promise<string>;

beforeAll(async () => {
  const { privateKey, publicKey } = await generateKeyPair("ES256");
  verifier = new JwtVerifier({ audience: "threadwise", issuer: "test-issuer", key: publicKey, tenantClaim: "tenant", rolesClaim: "roles" });
  sign = (claims, subject = "alice") =>
    new SignJWT(claims)
      .setProtectedHeader({ alg: "ES256" })
      .setSubject(subject)
      .setIssuer("test-issuer")
      .setAudience("threadwise")
      .setExpirationTime("5m")
      .sign(privateKey);
  signAt = ({ expiresInS, notBeforeInS }) => {
    const now = Math.floor(Date.now() / 1000);
    const jwt = new SignJWT({}).setProtectedHeader({ alg: "ES256" }).setSubject("alice").setIssuer("test-issuer").setAudience("threadwise");
    if (notBeforeInS !== undefined) jwt.setNotBefore(now + notBeforeInS);
    return jwt.setExpirationTime(now + expiresInS).sign(privateKey);
  };
});

async function reason(header: string): Promise<string> {
  const error = await verifier.verifyAuthorizationHeader(header).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(AuthenticationError);
  return (error as AuthenticationError).message;
}

describe("auth/jwt-verifier", () => {
  describe("verifyAuthorizationHeader", () => {
    it("returns the API principal and roles of a valid token", async () => {
      const caller = await verifier.verifyAuthorizationHeader(`Bearer ${await sign({ tenant: "acme", roles: ["analyst"] })}`);
      expect(caller).toEqual({ principal: { issuer: "api", tenant: "acme", subject: "alice" }, roles: ["analyst"] });
    });

    it("throws AuthenticationError with the reason for a signed token whose tenant is a list or empty", async () => {
      expect(await reason(`Bearer ${await sign({ tenant: ["acme", "globex"] })}`)).toBe("the tenant claim must be a non-empty string when present");
      expect(await reason(`Bearer ${await sign({ tenant: "" })}`)).toBe("the tenant claim must be a non-empty string when present");
    });

    it("throws AuthenticationError for a missing, malformed or tampered token", async () => {
      expect(await reason("")).toBe("missing bearer token");
      expect(await reason("Basic YWxpY2U6cHc=")).toBe("authorization header is not a bearer token");
      const token = await sign({ tenant: "acme" });
      const [header, payload, signature] = token.split(".");
      const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, "base64url").toString()), tenant: "globex" })).toString("base64url");
      expect(await reason(`Bearer ${header}.${forged}.${signature}`)).toBe("invalid token");
    });
  });

  describe("clock tolerance (DEFAULT_CLOCK_TOLERANCE_S)", () => {
    const margin = 10;
    it("returns the caller of a token expired, or not yet valid, by less than the tolerance", async () => {
      expect(DEFAULT_CLOCK_TOLERANCE_S).toBe(30);
      await expect(verifier.verify(await signAt({ expiresInS: -(DEFAULT_CLOCK_TOLERANCE_S - margin) }))).resolves.toMatchObject({
        principal: { subject: "alice" },
      });
      await expect(verifier.verify(await signAt({ expiresInS: 300, notBeforeInS: DEFAULT_CLOCK_TOLERANCE_S - margin }))).resolves.toMatchObject({
        principal: { subject: "alice" },
      });
    });

    it("throws AuthenticationError for a token expired, or not yet valid, by more than the tolerance", async () => {
      await expect(verifier.verify(await signAt({ expiresInS: -(DEFAULT_CLOCK_TOLERANCE_S + margin) }))).rejects.toBeInstanceOf(AuthenticationError);
      await expect(verifier.verify(await signAt({ expiresInS: 300, notBeforeInS: DEFAULT_CLOCK_TOLERANCE_S + margin }))).rejects.toBeInstanceOf(
        AuthenticationError,
      );
    });
  });

  describe("with an issuer's OpenID keys and several audiences (the streaming function)", () => {
    it("returns the caller of a token for any listed audience, signed with a key the issuer's metadata names", async () => {
      const issuer = await startOidcIssuer("api://threadwise");
      try {
        const metadata = new OpenIdKeySource(`${issuer.issuer}.well-known/openid-configuration`);
        const oidc = new JwtVerifier({
          audience: ["threadwise", "api://threadwise"],
          issuer: issuer.issuer,
          key: metadata,
          tenantClaim: "tenant",
          rolesClaim: "roles",
        });
        for (const audience of ["threadwise", "api://threadwise"]) {
          const caller = await oidc.verify(await issuer.sign("alice", { audience, claims: { tenant: "acme" } }));
          expect(caller.principal, audience).toEqual({ issuer: "api", tenant: "acme", subject: "alice" });
        }
        await expect(oidc.verify(await issuer.sign("alice", { audience: "other" }))).rejects.toThrow(AuthenticationError);
        await expect(oidc.verify(await issuer.sign("alice", { foreignKey: true }))).rejects.toThrow(AuthenticationError);
      } finally {
        await issuer.close();
      }
    });

    it("throws ServiceUnavailableError, not AuthenticationError, when the issuer's metadata cannot be read", async () => {
      const issuer = await startOidcIssuer("threadwise");
      const token = await issuer.sign("alice");
      await issuer.close();
      const oidc = new JwtVerifier({
        audience: "threadwise",
        issuer: issuer.issuer,
        key: new OpenIdKeySource(`${issuer.issuer}.well-known/openid-configuration`, { timeoutMs: 1_000 }),
        tenantClaim: "tenant",
        rolesClaim: "roles",
      });
      await expect(oidc.verify(token)).rejects.toThrow(ServiceUnavailableError);
    });
  });
});
