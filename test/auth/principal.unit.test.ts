import { describe, expect, it } from "vitest";
import {
  apiPrincipal,
  callerSchema,
  ownerKey,
  ownerSchema,
  principalSchema,
  slackPrincipal,
  teamsPrincipal,
  tenantOwner,
  type Owner,
} from "../../lib/auth/principal.js";

/** The messages of a schema's refusal, or "accepted". */
function refusal(
  schema: { safeParse(value: unknown): { success: boolean; error?: { issues: { message: string }[] } } },
  value: unknown,
): string[] | "accepted" {
  const parsed = schema.safeParse(value);
  return parsed.success ? "accepted" : (parsed.error?.issues.map((issue) => issue.message) ?? []);
}

describe("auth/principal", () => {
  describe("apiPrincipal, slackPrincipal, teamsPrincipal", () => {
    it("returns the principal with the issuer of its verifier, the tenant and the subject", () => {
      expect(apiPrincipal("alice", "acme")).toEqual({ issuer: "api", tenant: "acme", subject: "alice" });
      expect(slackPrincipal("T1", "U1")).toEqual({ issuer: "slack", tenant: "T1", subject: "U1" });
      expect(teamsPrincipal("tenant-1", "object-1")).toEqual({ issuer: "teams", tenant: "tenant-1", subject: "object-1" });
      expect(teamsPrincipal(null, "29:account")).toEqual({ issuer: "teams", tenant: null, subject: "29:account" });
    });

    it("returns an API principal with a null tenant when none is given", () => {
      expect(apiPrincipal("alice")).toEqual({ issuer: "api", tenant: null, subject: "alice" });
    });
  });

  describe("tenantOwner", () => {
    it("returns the channel tenant as a whole: its issuer and tenant, a null subject", () => {
      expect(tenantOwner("slack", "T1")).toEqual({ issuer: "slack", tenant: "T1", subject: null });
      expect(tenantOwner("teams", "tenant-1")).toEqual({ issuer: "teams", tenant: "tenant-1", subject: null });
    });
  });

  describe("ownerKey", () => {
    it("returns different keys for owners that differ in one part only, even where joined texts would collide", () => {
      const owners: Owner[] = [
        { issuer: "api", tenant: "acme", subject: "alice" },
        { issuer: "slack", tenant: "acme", subject: "alice" },
        { issuer: "api", tenant: null, subject: "alice" },
        { issuer: "api", tenant: "null", subject: "alice" },
        { issuer: "api", tenant: "acme", subject: "bob" },
        { issuer: "slack", tenant: "acme", subject: null },
        { issuer: "api", tenant: "a:b", subject: "c" },
        { issuer: "api", tenant: "a", subject: "b:c" },
        { issuer: "api", tenant: 'a","b', subject: "c" },
        { issuer: "api", tenant: "a", subject: 'b","c' },
      ];
      expect(new Set(owners.map(ownerKey)).size).toBe(owners.length);
    });

    it("returns the same key for the same owner, whichever object holds it", () => {
      expect(ownerKey(slackPrincipal("T1", "U1"))).toBe(ownerKey({ subject: "U1", tenant: "T1", issuer: "slack" }));
      expect(ownerKey(tenantOwner("slack", "T1"))).toBe(JSON.stringify(["slack", "T1", null]));
    });
  });

  describe("principalSchema", () => {
    it("accepts a principal of each issuer, with or without a tenant", () => {
      for (const principal of [apiPrincipal("alice", "acme"), apiPrincipal("alice"), slackPrincipal("T1", "U1"), teamsPrincipal(null, "o")]) {
        expect(refusal(principalSchema, principal)).toBe("accepted");
      }
    });

    it("refuses an unknown issuer, an empty tenant or subject, a missing tenant, a null subject and extra keys", () => {
      expect(refusal(principalSchema, { issuer: "email", tenant: null, subject: "alice" })).not.toBe("accepted");
      expect(refusal(principalSchema, { issuer: "api", tenant: "", subject: "alice" })).not.toBe("accepted");
      expect(refusal(principalSchema, { issuer: "api", tenant: null, subject: "" })).not.toBe("accepted");
      expect(refusal(principalSchema, { issuer: "api", subject: "alice" })).not.toBe("accepted");
      expect(refusal(principalSchema, { issuer: "slack", tenant: "T1", subject: null })).not.toBe("accepted");
      expect(refusal(principalSchema, { issuer: "api", tenant: null, subject: "alice", roles: [] })).not.toBe("accepted");
    });
  });

  describe("ownerSchema", () => {
    it("accepts a principal, and a Slack workspace or Teams tenant without a subject", () => {
      expect(refusal(ownerSchema, apiPrincipal("alice"))).toBe("accepted");
      expect(refusal(ownerSchema, tenantOwner("slack", "T1"))).toBe("accepted");
      expect(refusal(ownerSchema, tenantOwner("teams", "tenant-1"))).toBe("accepted");
    });

    it("refuses an owner without a subject that is not a channel tenant: an API tenant, or no tenant", () => {
      const message = ["only a channel tenant owns without a subject"];
      expect(refusal(ownerSchema, { issuer: "api", tenant: "acme", subject: null })).toEqual(message);
      expect(refusal(ownerSchema, { issuer: "slack", tenant: null, subject: null })).toEqual(message);
      expect(refusal(ownerSchema, { issuer: "teams", tenant: null, subject: null })).toEqual(message);
    });

    it("refuses an empty tenant or subject, an unknown issuer and extra keys", () => {
      expect(refusal(ownerSchema, { issuer: "slack", tenant: "", subject: null })).not.toBe("accepted");
      expect(refusal(ownerSchema, { issuer: "slack", tenant: "T1", subject: "" })).not.toBe("accepted");
      expect(refusal(ownerSchema, { issuer: "email", tenant: "T1", subject: "U1" })).not.toBe("accepted");
      expect(refusal(ownerSchema, { issuer: "slack", tenant: "T1", subject: "U1", admin: true })).not.toBe("accepted");
    });
  });

  describe("callerSchema", () => {
    it("accepts a principal with its roles, and refuses roles that are not strings or extra keys", () => {
      expect(refusal(callerSchema, { principal: apiPrincipal("alice"), roles: ["analyst"] })).toBe("accepted");
      expect(refusal(callerSchema, { principal: apiPrincipal("alice"), roles: [1] })).not.toBe("accepted");
      expect(refusal(callerSchema, { principal: apiPrincipal("alice") })).not.toBe("accepted");
      expect(refusal(callerSchema, { principal: apiPrincipal("alice"), roles: [], admin: true })).not.toBe("accepted");
      expect(refusal(callerSchema, { principal: { issuer: "api", tenant: null, subject: "" }, roles: [] })).not.toBe("accepted");
    });
  });
});
