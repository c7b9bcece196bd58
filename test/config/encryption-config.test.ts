import { describe, expect, it } from "vitest";
import { DEFAULT_CONTENT_DATA_KEY_MAX_AGE_SECONDS, DEFAULT_CONTENT_KEY_DELETION_DAYS, loadEncryptionConfig } from "../../lib/config/encryption-config.js";

describe("loadEncryptionConfig", () => {
  it("returns encryption on with local keys and the default ages unless set", () => {
    expect(loadEncryptionConfig({})).toEqual({
      enabled: true,
      keys: "local",
      dataKeyMaxAgeSeconds: DEFAULT_CONTENT_DATA_KEY_MAX_AGE_SECONDS,
      keyDeletionDays: DEFAULT_CONTENT_KEY_DELETION_DAYS,
      keyRotationDays: 0,
    });
    expect(loadEncryptionConfig({ CONTENT_KEY_ROTATION_DAYS: "90" })).toMatchObject({ keyRotationDays: 90 });
    expect(loadEncryptionConfig({ CONTENT_ENCRYPTION: "off", CONTENT_KEYS: "kms" })).toMatchObject({ enabled: false, keys: "kms" });
  });

  it("throws for anything but on or off, and for a deletion window KMS does not allow", () => {
    expect(() => loadEncryptionConfig({ CONTENT_ENCRYPTION: "no" })).toThrow(/invalid configuration/);
    expect(() => loadEncryptionConfig({ CONTENT_KEY_DELETION_DAYS: "3" })).toThrow(/invalid configuration/);
    expect(() => loadEncryptionConfig({ CONTENT_KEY_ROTATION_DAYS: "-1" })).toThrow(/invalid configuration/);
  });
});
