import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { FieldCipher } from "../../lib/crypto/field-cipher.js";
import { LocalTenantKeys } from "../../lib/crypto/local-tenant-keys.js";
import { type TermKeyDocument, TenantTermKeys, TERM_HASH_CHARS } from "../../lib/crypto/tenant-term-keys.js";
import { ContentRefusedError } from "../../lib/errors.js";
import { useTestDatabase } from "../support/store-fixture.js";

const ACME = { issuer: "api", tenant: "acme" } as const;
const GLOBEX = { issuer: "api", tenant: "globex" } as const;
const database = useTestDatabase("tenant_term_keys");

async function termKeys(dir?: string) {
  const keys = new LocalTenantKeys(dir ?? (await mkdtemp(join(tmpdir(), "threadwise-term-keys-"))));
  const cipher = new FieldCipher({ keys, tenantOf: async () => ACME });
  return { termKeys: new TenantTermKeys(database.db.collection<TermKeyDocument>("term_keys"), cipher), cipher };
}

describe("TenantTermKeys", () => {
  describe("hasherOf", () => {
    it("returns the same hash for a term in every process, and another tenant's differs", async () => {
      const dir = await mkdtemp(join(tmpdir(), "threadwise-term-keys-"));
      const one = await (await termKeys(dir)).termKeys.hasherOf(ACME);
      const two = await (await termKeys(dir)).termKeys.hasherOf(ACME);
      const globex = await (await termKeys(dir)).termKeys.hasherOf(GLOBEX);
      expect(one("quarter")).toBe(two("quarter"));
      expect(one("quarter")).toHaveLength(TERM_HASH_CHARS);
      expect(one("quarter")).not.toBe(globex("quarter"));
      expect(one("quarter")).not.toBe(one("quarterly"));
    });

    it("stores the key sealed: no key material in clear", async () => {
      const { termKeys: keys } = await termKeys();
      await keys.hasherOf(ACME);
      const doc = await database.db.collection<TermKeyDocument>("term_keys").findOne({ _id: '["api","acme"]' });
      expect(doc?.key).toMatchObject({ sub_type: 0x80 });
    });

    it("throws when the tenant's content keys were shredded", async () => {
      const { termKeys: keys, cipher } = await termKeys();
      await keys.hasherOf(ACME);
      await cipher.shred(ACME);
      keys.forget(ACME);
      await expect(keys.hasherOf(ACME)).rejects.toBeInstanceOf(ContentRefusedError);
    });
  });
});
