import { describe, expect, it } from "vitest";
import { dataTargetSchema, limitScopeFilter, notPrincipalFilter, principalFilter, subjectOf } from "../../lib/lifecycle/data-subject.js";

describe("data-subject", () => {
  describe("dataTargetSchema", () => {
    it("throws for a tenant target without a tenant, and for a user without a subject", () => {
      expect(dataTargetSchema.safeParse({ kind: "tenant", issuer: "api", tenant: null }).success).toBe(false);
      expect(dataTargetSchema.safeParse({ kind: "user", issuer: "api", tenant: "acme" }).success).toBe(false);
      expect(dataTargetSchema.safeParse({ kind: "user", issuer: "api", tenant: null, subject: "ada" }).success).toBe(true);
    });
  });

  describe("principalFilter", () => {
    it("returns a user's issuer, tenant and subject under the prefix, and a tenant's without the subject", () => {
      expect(principalFilter("owner", subjectOf({ kind: "user", issuer: "api", tenant: "acme", subject: "ada" }))).toEqual({
        "owner.issuer": "api",
        "owner.tenant": "acme",
        "owner.subject": "ada",
      });
      expect(principalFilter("", subjectOf({ kind: "tenant", issuer: "slack", tenant: "T0" }))).toEqual({ issuer: "slack", tenant: "T0" });
      expect(notPrincipalFilter("askedBy", { issuer: "api", tenant: null, subject: "x" })).toEqual({
        $nor: [{ "askedBy.issuer": "api", "askedBy.tenant": null, "askedBy.subject": "x" }],
      });
    });
  });

  describe("limitScopeFilter", () => {
    it("returns a user's scope id, and for a tenant its own id or any of its users', never another tenant's whose name starts alike", () => {
      expect(limitScopeFilter("_id", { issuer: "api", tenant: "acme", subject: "ada" })).toEqual({ _id: 'u:["api","acme","ada"]' });
      const tenant = limitScopeFilter("scopeId", { issuer: "api", tenant: "acme" }) as { $or: [{ scopeId: string }, { scopeId: { $regex: string } }] };
      expect(tenant.$or[0]).toEqual({ scopeId: 't:["api","acme"]' });
      const users = new RegExp(tenant.$or[1].scopeId.$regex);
      expect(users.test('u:["api","acme","ada"]')).toBe(true);
      expect(users.test('u:["api","acme-two","ada"]')).toBe(false);
    });
  });
});
