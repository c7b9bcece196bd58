import { describe, expect, it } from "vitest";
import { apiPrincipal, slackPrincipal } from "../../lib/auth/principal.js";
import { scopeId, scopesOf } from "../../lib/limits/limit-scope.js";

describe("scopesOf", () => {
  it("returns the user and its tenant, or the user alone without a tenant", () => {
    expect(scopesOf(slackPrincipal("T1", "U1")).map((s) => s.kind)).toEqual(["user", "tenant"]);
    expect(scopesOf(apiPrincipal("alice")).map((s) => s.kind)).toEqual(["user"]);
  });
});

describe("scopeId", () => {
  it("returns distinct ids for a tenant and users whose names would run together", () => {
    const [user, tenant] = scopesOf(slackPrincipal("T1", "U1"));
    const ids = [scopeId(user), scopeId(tenant), scopeId({ ...user, tenant: "T1U", subject: "1" }), scopeId({ ...user, issuer: "teams" })];
    expect(new Set(ids).size).toBe(4);
  });
});
