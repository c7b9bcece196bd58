import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { KMS } from "@aws-sdk/client-kms";
import { describe, expect, it } from "vitest";
import { loadEncryptionConfig } from "../../lib/config/encryption-config.js";
import { createTenantKeys } from "../../lib/crypto/create-tenant-keys.js";
import { ContentKeysUnavailableError } from "../../lib/errors.js";
import { useTestDatabase } from "../support/store-fixture.js";

const database = useTestDatabase("create_tenant_keys");
const kms = new KMS({ region: "us-east-1", credentials: { accessKeyId: "AKIDTEST", secretAccessKey: "secret" } });

describe("createTenantKeys", () => {
  it("returns no keys when encryption is off", () => {
    expect(createTenantKeys(loadEncryptionConfig({ CONTENT_ENCRYPTION: "off" }), { db: database.db })).toBeUndefined();
  });

  it("returns local key files with the local server's directory, and KMS keys when CONTENT_KEYS=kms", async () => {
    const localDir = await mkdtemp(join(tmpdir(), "threadwise-create-keys-"));
    expect(createTenantKeys(loadEncryptionConfig({}), { db: database.db, localDir })?.kind).toBe("local");
    expect(createTenantKeys(loadEncryptionConfig({ CONTENT_KEYS: "kms" }), { db: database.db, kms })?.kind).toBe("kms");
  });

  it("throws, naming the settings, when encryption is on with local keys and no local directory (a function in AWS)", () => {
    expect(() => createTenantKeys(loadEncryptionConfig({}), { db: database.db })).toThrow(ContentKeysUnavailableError);
    expect(() => createTenantKeys(loadEncryptionConfig({}), { db: database.db })).toThrow(/CONTENT_KEYS=kms.*CONTENT_ENCRYPTION=off/);
  });
});
