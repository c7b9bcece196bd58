import { describe, expect, it } from "vitest";
import { callerFromClaims } from "../../lib/auth/caller-from-claims.js";
import { AuthenticationError } from "../../lib/errors.js";

const names = { tenantClaim: "tenant", rolesClaim: "roles" };

function refusal(claims: Record<string, unknown>): AuthenticationError {
  try {
    callerFromClaims(claims, names);
  } catch (error) {
    if (error instanceof AuthenticationError) return error;
    throw error;
  }
  throw new Error("the claims were accepted");
}

describe("auth/caller-from-claims", () => {
  describe("callerFromClaims", () => {
    it("throws with requireTenant for a token without the tenant claim, and says to send the ID token for a Cognito access token", () => {
      const strict = { tenantClaim: "custom:tenant", rolesClaim: "roles", requireTenant: true };
      expect(() => callerFromClaims({ sub: "alice" }, strict)).toThrow(
        "this deployment requires the custom:tenant claim on every API token, and this token has none",
      );
      expect(() => callerFromClaims({ sub: "alice", token_use: "access", client_id: "c" }, strict)).toThrow(/send the ID token/);
      expect(callerFromClaims({ sub: "alice", "custom:tenant": "acme", token_use: "id" }, strict).principal).toEqual({
        issuer: "api",
        tenant: "acme",
        subject: "alice",
      });
    });

    it("returns an API principal with the subject, the tenant and the roles", () => {
      expect(callerFromClaims({ sub: "alice", tenant: "acme", roles: ["analyst"] }, names)).toEqual({
        principal: { issuer: "api", tenant: "acme", subject: "alice" },
        roles: ["analyst"],
      });
    });

    it("returns an API principal whatever the subject says: a channel's name in it borrows nothing", () => {
      expect(callerFromClaims({ sub: "slack:T0LOCAL", tenant: "slack:T0LOCAL" }, names).principal).toEqual({
        issuer: "api",
        tenant: "slack:T0LOCAL",
        subject: "slack:T0LOCAL",
      });
    });

    it("returns a null tenant when the claim is absent", () => {
      expect(callerFromClaims({ sub: "alice" }, names)).toEqual({ principal: { issuer: "api", tenant: null, subject: "alice" }, roles: [] });
    });

    it("returns roles from a blank- or comma-separated string", () => {
      expect(callerFromClaims({ sub: "alice", roles: "analyst, finance viewer" }, names).roles).toEqual(["analyst", "finance", "viewer"]);
    });

    it("returns no empty role from separators at the ends or doubled, nor from empty strings in a list", () => {
      expect(callerFromClaims({ sub: "alice", roles: " analyst,,viewer, " }, names).roles).toEqual(["analyst", "viewer"]);
      expect(callerFromClaims({ sub: "alice", roles: ["analyst", ""] }, names).roles).toEqual(["analyst"]);
      expect(callerFromClaims({ sub: "alice", roles: "" }, names).roles).toEqual([]);
    });

    it("throws AuthenticationError naming the claim for a tenant that is a list, empty, or not a string", () => {
      for (const tenant of [["acme", "globex"], [], "", 42, null, { id: "acme" }]) {
        expect(refusal({ sub: "alice", tenant }).message).toBe("the tenant claim must be a non-empty string when present");
      }
    });

    it("throws AuthenticationError for a subject that is a list, empty or missing", () => {
      for (const sub of [["alice"], "", undefined, 7]) expect(refusal({ sub }).message).toBe("the sub claim must be a non-empty string");
    });

    it("throws AuthenticationError for roles that are neither a string nor a list of strings", () => {
      expect(refusal({ sub: "alice", roles: [1, "analyst"] }).message).toBe("the roles claim must be a string or a list of strings");
      expect(refusal({ sub: "alice", roles: { admin: true } }).message).toBe("the roles claim must be a string or a list of strings");
    });

    it("reads the claims under their configured names", () => {
      const caller = callerFromClaims({ sub: "alice", tid: "acme", groups: ["g1"] }, { tenantClaim: "tid", rolesClaim: "groups" });
      expect(caller).toEqual({ principal: { issuer: "api", tenant: "acme", subject: "alice" }, roles: ["g1"] });
    });
  });
});
