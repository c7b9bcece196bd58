import { mkdtemp, readdir, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { LOCAL_CONTENT_KEYS_DIR, LocalTenantKeys } from "../../lib/crypto/local-tenant-keys.js";

const ACME = { issuer: "api", tenant: "acme" } as const;
const newDir = () => mkdtemp(join(tmpdir(), "threadwise-local-keys-"));

describe("LocalTenantKeys", () => {
  describe("keyrings", () => {
    it("makes the tenant's key file on first use, readable by its owner only, and reuses it", async () => {
      const dir = await newDir();
      const first = await new LocalTenantKeys(dir).keyrings(ACME);
      const files = await readdir(join(dir, LOCAL_CONTENT_KEYS_DIR));
      expect(files).toHaveLength(1);
      expect((await stat(join(dir, LOCAL_CONTENT_KEYS_DIR, files[0]))).mode & 0o777).toBe(0o600);
      expect((await new LocalTenantKeys(dir).keyrings(ACME)).current).toBe(first.current);
    });

    it("keeps one file per tenant", async () => {
      const dir = await newDir();
      const keys = new LocalTenantKeys(dir);
      await keys.keyrings(ACME);
      await keys.keyrings({ issuer: "slack", tenant: "acme" });
      expect(await readdir(join(dir, LOCAL_CONTENT_KEYS_DIR))).toHaveLength(2);
    });
  });

  describe("rotate", () => {
    it("returns a new current key", async () => {
      const keys = new LocalTenantKeys(await newDir());
      const before = (await keys.keyrings(ACME)).current;
      const { keyId } = await keys.rotate(ACME);
      expect(keyId).not.toBe(before);
      expect((await keys.keyrings(ACME)).current).toBe(keyId);
    });
  });

  describe("currentKeys", () => {
    it("returns each tenant's current key and when it was made, and none for a tenant shredded", async () => {
      const keys = new LocalTenantKeys(await newDir());
      expect(await keys.currentKeys()).toEqual([]);
      const globex = { issuer: "api" as const, tenant: "globex" };
      await keys.keyrings(globex);
      const { keyId } = await keys.rotate(ACME, new Date("2026-01-02T03:04:05Z"));
      const current = await keys.currentKeys();
      expect(current.find((k) => k.tenant.tenant === ACME.tenant)).toEqual({ tenant: ACME, keyId, createdAt: new Date("2026-01-02T03:04:05Z") });
      await keys.shred(globex);
      expect((await keys.currentKeys()).map((k) => k.tenant)).toEqual([ACME]);
    });
  });

  describe("shred", () => {
    it("deletes the tenant's key file and names its keys", async () => {
      const dir = await newDir();
      const keys = new LocalTenantKeys(dir);
      const { current } = await keys.keyrings(ACME);
      const receipt = await keys.shred(ACME);
      expect(receipt.keys).toEqual([current]);
      expect(await readdir(join(dir, LOCAL_CONTENT_KEYS_DIR))).toEqual([]);
    });
  });
});
