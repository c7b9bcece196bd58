import { describe, expect, it } from "vitest";
import { adminAuthorityOf, authorityCovers, authorizeAdmin, type AdminRoles } from "../../lib/auth/admin-scope.js";
import { apiPrincipal, slackPrincipal, type Caller } from "../../lib/auth/principal.js";
import { ForbiddenError } from "../../lib/errors.js";

const roles: AdminRoles = { operatorRole: "ops", tenantAdminRole: "admin" };
const caller = (principal: Caller["principal"], ...names: string[]): Caller => ({ principal, roles: names });

describe("admin-scope", () => {
  describe("adminAuthorityOf", () => {
    it("returns the operator for an API token with the operator role, with or without a tenant", () => {
      expect(adminAuthorityOf(caller(apiPrincipal("o"), "ops"), roles)).toEqual({ kind: "operator" });
      expect(adminAuthorityOf(caller(apiPrincipal("o", "acme"), "ops", "admin"), roles)).toEqual({ kind: "operator" });
    });

    it("returns the caller's own issuer and tenant for the tenant-admin role", () => {
      expect(adminAuthorityOf(caller(apiPrincipal("a", "acme"), "admin"), roles)).toEqual({ kind: "tenant", issuer: "api", tenant: "acme" });
    });

    it("throws when no operator role is configured, whatever role the token names", () => {
      expect(() => adminAuthorityOf(caller(apiPrincipal("o"), "ops"), { tenantAdminRole: "admin" })).toThrow(ForbiddenError);
    });

    it("throws for the operator role held by a channel user: it is honoured on API tokens only", () => {
      expect(() => adminAuthorityOf(caller(slackPrincipal("T1", "U1"), "ops"), roles)).toThrow(ForbiddenError);
      expect(adminAuthorityOf(caller(slackPrincipal("T1", "U1"), "ops", "admin"), roles)).toEqual({ kind: "tenant", issuer: "slack", tenant: "T1" });
    });

    it("throws for the tenant-admin role on a token that names no tenant", () => {
      expect(() => adminAuthorityOf(caller(apiPrincipal("a"), "admin"), roles)).toThrow(/names none/);
    });

    it("throws for a caller without either role", () => {
      expect(() => adminAuthorityOf(caller(apiPrincipal("a", "acme"), "analyst"), roles)).toThrow(/needs the admin role/);
    });
  });

  describe("authorityCovers", () => {
    const acme = { kind: "tenant", issuer: "api", tenant: "acme" } as const;

    it("returns true for the tenant admin's own tenant and its users", () => {
      expect(authorityCovers(acme, { issuer: "api", tenant: "acme" })).toBe(true);
      expect(authorityCovers(acme, { issuer: "api", tenant: "acme", subject: "alice" })).toBe(true);
    });

    it("returns false for another tenant, another issuer's tenant of the same name, and callers without a tenant", () => {
      expect(authorityCovers(acme, { issuer: "api", tenant: "globex" })).toBe(false);
      expect(authorityCovers(acme, { issuer: "slack", tenant: "acme" })).toBe(false);
      expect(authorityCovers(acme, { issuer: "api", tenant: null, subject: "bob" })).toBe(false);
    });

    it("returns true for an operator on any scope", () => {
      expect(authorityCovers({ kind: "operator" }, { issuer: "teams", tenant: null, subject: "x" })).toBe(true);
    });
  });

  describe("authorizeAdmin", () => {
    it("throws a message naming the caller's tenant and the one it asked for", () => {
      expect(() => authorizeAdmin(caller(apiPrincipal("g", "globex"), "admin"), roles, { issuer: "slack", tenant: "T0123" })).toThrow(
        "a tenant admin administers its own tenant (api/globex) and its users only, not slack/T0123",
      );
    });
  });
});
