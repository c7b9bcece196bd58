import { describe, expect, it } from "vitest";
import { tenantKey } from "../../lib/crypto/tenant-keys.js";

describe("tenantKey", () => {
  it("returns distinct strings for distinct issuers, tenants and no tenant", () => {
    const keys = [
      tenantKey({ issuer: "api", tenant: "acme" }),
      tenantKey({ issuer: "slack", tenant: "acme" }),
      tenantKey({ issuer: "api", tenant: null }),
      tenantKey({ issuer: "api", tenant: "null" }),
    ];
    expect(new Set(keys).size).toBe(4);
  });
});
