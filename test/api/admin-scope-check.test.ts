import { describe, expect, it } from "vitest";
import { assertMayAdminister, isOperator } from "../../lib/api/admin-scope-check.js";
import { apiPrincipal } from "../../lib/auth/principal.js";

const roles = { adminRole: "admin", operatorRole: "operator" };
const acme = { issuer: "api", tenant: "acme" };

describe("admin-scope-check", () => {
  describe("assertMayAdminister", () => {
    it("allows a tenant admin their own tenant only", () => {
      expect(() => assertMayAdminister({ principal: apiPrincipal("root", "acme"), roles: ["admin"] }, acme, roles)).not.toThrow();
      expect(() => assertMayAdminister({ principal: apiPrincipal("root", "globex"), roles: ["admin"] }, acme, roles)).toThrow(/their own tenant only/);
      expect(() => assertMayAdminister({ principal: apiPrincipal("root", "acme"), roles: ["admin"] }, { issuer: "slack", tenant: "acme" }, roles)).toThrow(
        /their own tenant only/,
      );
    });

    it("throws for an admin without a tenant, and for a caller without the role", () => {
      expect(() => assertMayAdminister({ principal: apiPrincipal("root"), roles: ["admin"] }, { issuer: "api", tenant: null }, roles)).toThrow(
        /needs a tenant/,
      );
      expect(() => assertMayAdminister({ principal: apiPrincipal("ada", "acme"), roles: [] }, acme, roles)).toThrow(/needs the admin role/);
    });

    it("allows an operator every tenant, and nobody is an operator when no role is configured", () => {
      const operator = { principal: apiPrincipal("op"), roles: ["operator"] };
      expect(() => assertMayAdminister(operator, { issuer: "teams", tenant: "any" }, roles)).not.toThrow();
      expect(isOperator(operator, { adminRole: "admin" })).toBe(false);
      expect(() => assertMayAdminister(operator, acme, { adminRole: "admin" })).toThrow();
    });
  });
});
