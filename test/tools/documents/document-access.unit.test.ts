import { describe, expect, it } from "vitest";
import { apiPrincipal, slackPrincipal } from "../../../lib/auth/principal.js";
import { audienceOf, retrievalFilter } from "../../../lib/tools/documents/document-access.js";

describe("audienceOf", () => {
  it("returns the issuer-qualified tenant and the roles of the caller", () => {
    expect(audienceOf({ principal: slackPrincipal("T0ACME", "U1"), roles: ["finance"] })).toEqual({ tenant: "slack:T0ACME", groups: ["finance"] });
  });

  it("returns no tenant for an API caller without one", () => {
    expect(audienceOf({ principal: apiPrincipal("u"), roles: [] })).toEqual({ tenant: null, groups: [] });
  });
});

describe("retrievalFilter", () => {
  it("returns single listContains filters for a caller of no tenant and no groups, since orAll needs two", () => {
    expect(retrievalFilter({ tenant: null, groups: [] })).toEqual({
      andAll: [{ listContains: { key: "allowed_tenants", value: "*" } }, { listContains: { key: "allowed_groups", value: "*" } }],
    });
  });

  it("returns each group once, and never an empty group or a group named * twice", () => {
    const filter = retrievalFilter({ tenant: "api:acme", groups: ["finance", "finance", "*", ""] }, { tenantsKey: "t", groupsKey: "g" });
    expect(filter.andAll?.[1]).toEqual({ orAll: [{ listContains: { key: "g", value: "*" } }, { listContains: { key: "g", value: "finance" } }] });
  });
});
