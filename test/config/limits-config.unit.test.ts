import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { DEFAULT_LIMITS_ADMIN_ROLE, LIMITS_SETTINGS, loadLimitsConfig } from "../../lib/config/limits-config.js";
import { configTable } from "../../lib/config/settings.js";

describe("loadLimitsConfig", () => {
  it("returns no limit where none is set, and the defaults of the other settings", () => {
    expect(loadLimitsConfig({})).toMatchObject({ user: {}, tenant: {}, adminRole: DEFAULT_LIMITS_ADMIN_ROLE, cacheSeconds: 30 });
  });

  it("returns the user and tenant defaults set in the environment", () => {
    const config = loadLimitsConfig({ LIMIT_USER_TOKENS_PER_DAY: "1000", LIMIT_TENANT_USD_PER_MONTH: "250.5", LIMIT_USER_TURNS_PER_MINUTE: " " });
    expect(config.user).toEqual({ tokensPerDay: 1000 });
    expect(config.tenant).toEqual({ usdPerMonth: 250.5 });
  });

  it("returns no operator role unless OPERATOR_ROLE names one", () => {
    expect(loadLimitsConfig({}).operatorRole).toBeUndefined();
    expect(loadLimitsConfig({ OPERATOR_ROLE: " " }).operatorRole).toBeUndefined();
    expect(loadLimitsConfig({ OPERATOR_ROLE: "ops" }).operatorRole).toBe("ops");
  });

  it("throws when OPERATOR_ROLE is the tenant-admin role, which would make every tenant's admin an operator", () => {
    expect(() => loadLimitsConfig({ OPERATOR_ROLE: DEFAULT_LIMITS_ADMIN_ROLE })).toThrow(/invalid configuration/);
    expect(() => loadLimitsConfig({ OPERATOR_ROLE: "x", LIMITS_ADMIN_ROLE: "x" })).toThrow(/invalid configuration/);
  });

  it("throws for a cache longer than a minute and for a limit that is not a positive number", () => {
    expect(() => loadLimitsConfig({ LIMITS_CACHE_SECONDS: "61" })).toThrow(/invalid configuration/);
    expect(() => loadLimitsConfig({ LIMIT_USER_CONCURRENT_TURNS: "0" })).toThrow(/invalid configuration/);
  });
});

describe("LIMITS_SETTINGS", () => {
  it("returns the table docs/limits.md holds between its markers", () => {
    const doc = readFileSync(new URL("../../docs/limits.md", import.meta.url), "utf8");
    const held = /<!-- limits-table:start -->\n([\s\S]*?)\n<!-- limits-table:end -->/.exec(doc)?.[1];
    expect(held).toBe(configTable(LIMITS_SETTINGS));
  });
});
