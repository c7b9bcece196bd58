import { describe, expect, it } from "vitest";
import { DEFAULT_AUDIT_RETENTION_DAYS, loadLifecycleConfig } from "../../lib/config/lifecycle-config.js";

describe("lifecycle-config", () => {
  describe("loadLifecycleConfig", () => {
    it("returns the defaults: audit records kept 400 days, and no operator", () => {
      expect(loadLifecycleConfig({})).toEqual({ auditRetentionDays: DEFAULT_AUDIT_RETENTION_DAYS });
    });

    it("returns the settings given, and throws for a retention that is not a positive number of days", () => {
      expect(loadLifecycleConfig({ AUDIT_RETENTION_DAYS: "30" })).toEqual({ auditRetentionDays: 30 });
      expect(() => loadLifecycleConfig({ AUDIT_RETENTION_DAYS: "0" })).toThrow(/invalid configuration/);
    });
  });
});
