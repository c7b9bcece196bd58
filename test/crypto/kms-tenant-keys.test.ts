import { KMS } from "@aws-sdk/client-kms";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { FieldCipher } from "../../lib/crypto/field-cipher.js";
import { CONTENT_KEYS_COLLECTION } from "../../lib/crypto/tenant-keys.js";
import { type ContentKeyDocument, DEPLOYMENT_KEY_TAG, KmsTenantKeys, TENANT_KEY_TAG } from "../../lib/crypto/kms-tenant-keys.js";
import type { TenantRef } from "../../lib/crypto/tenant-keys.js";
import { ContentRefusedError } from "../../lib/errors.js";
import { startKmsKeysEndpoint, type KmsKeysEndpoint } from "../support/kms-keys-endpoint.js";
import { useTestDatabase } from "../support/store-fixture.js";

const database = useTestDatabase("kms_tenant_keys");
const ACME: TenantRef = { issuer: "teams", tenant: "acme-tenant" };
const GLOBEX: TenantRef = { issuer: "teams", tenant: "globex-tenant" };
const owners: Record<string, TenantRef> = { c1: ACME, g1: GLOBEX };
const ref = (id: string) => ({ collection: "messages", id, field: "content" });

let kms: KmsKeysEndpoint;
let client: KMS;
beforeAll(async () => {
  kms = await startKmsKeysEndpoint();
  client = new KMS({ endpoint: kms.url, region: "us-east-1", credentials: { accessKeyId: "AKIDTEST", secretAccessKey: "secret" } });
});
afterAll(() => kms.close());

const keysOf = () => new KmsTenantKeys(client, database.db.collection<ContentKeyDocument>(CONTENT_KEYS_COLLECTION));
const cipherOf = (keys = keysOf()) => new FieldCipher({ keys, tenantOf: async (id) => owners[id] });

describe("KmsTenantKeys", () => {
  describe("keyrings", () => {
    it("creates one KMS key per tenant, tagged with it, and records its ARN", async () => {
      const keys = keysOf();
      const acme = await keys.keyrings(ACME);
      const globex = await keys.keyrings(GLOBEX);
      expect(acme.current).not.toBe(globex.current);
      expect((await keys.keyrings(ACME)).current).toBe(acme.current);
      expect(kms.keys.get(acme.current)?.tags).toEqual([{ TagKey: TENANT_KEY_TAG, TagValue: '["teams","acme-tenant"]' }]);
      const doc = await database.db.collection<ContentKeyDocument>(CONTENT_KEYS_COLLECTION).findOne({ _id: '["teams","acme-tenant"]' });
      expect(doc?.keys.map((k) => k.arn)).toEqual([acme.current]);
    });

    it("tags each key made with the deployment too when given one, the tag the stack's IAM policy requires", async () => {
      const registry = database.db.collection<ContentKeyDocument>(CONTENT_KEYS_COLLECTION);
      const tenant: TenantRef = { issuer: "api", tenant: "initech" };
      const { current } = await new KmsTenantKeys(client, registry, { deployment: "prod" }).keyrings(tenant);
      expect(kms.keys.get(current)?.tags).toEqual([
        { TagKey: TENANT_KEY_TAG, TagValue: '["api","initech"]' },
        { TagKey: DEPLOYMENT_KEY_TAG, TagValue: "prod" },
      ]);
    });

    it("tries a just-made key's refused data-key calls again (KMS may refuse them until its tags reach authorization), then fails", async () => {
      const slow = await startKmsKeysEndpoint({ refusedFirstUses: 2 });
      try {
        const slowClient = new KMS({ endpoint: slow.url, region: "us-east-1", credentials: { accessKeyId: "AKIDTEST", secretAccessKey: "secret" } });
        const registry = database.db.collection<ContentKeyDocument>(CONTENT_KEYS_COLLECTION);
        const hooli: TenantRef = { issuer: "api", tenant: "hooli" };
        const keys = new KmsTenantKeys(slowClient, registry, { newKeyRetryDelaysMs: [1, 1] });
        const cipher = new FieldCipher({ keys, tenantOf: async () => hooli });
        const sealed = await cipher.sealText("h1", ref("h1:user"), "after the refusals");
        expect(slow.calls.filter((c) => c.startsWith("GenerateDataKey"))).toHaveLength(3);
        expect(await cipher.openText("h1", ref("h1:user"), sealed)).toBe("after the refusals");

        // Refused more often than it waits: the refusal reaches the caller.
        const impatient = new KmsTenantKeys(slowClient, registry, { newKeyRetryDelaysMs: [1] });
        const initrode: TenantRef = { issuer: "api", tenant: "initrode" };
        await expect(new FieldCipher({ keys: impatient, tenantOf: async () => initrode }).sealText("i1", ref("i1:user"), "x")).rejects.toThrow();
      } finally {
        await slow.close();
      }
    });

    it("asks KMS for one data key for a tenant's many values (the caching materials manager), and none to read them back", async () => {
      const cipher = cipherOf();
      const start = kms.calls.length;
      const sealed = [];
      for (let i = 0; i < 20; i++) sealed.push(await cipher.sealText("c1", ref(`t${i}:user`), `question ${i}`));
      for (let i = 0; i < 20; i++) expect(await cipher.openText("c1", ref(`t${i}:user`), sealed[i])).toBe(`question ${i}`);
      const dataKeyCalls = kms.calls.slice(start).filter((c) => c.startsWith("GenerateDataKey") || c.startsWith("Decrypt"));
      expect(dataKeyCalls).toEqual([`GenerateDataKey ${(await keysOf().keyrings(ACME)).current}`, `Decrypt ${(await keysOf().keyrings(ACME)).current}`]);
    });
  });

  describe("rotate", () => {
    it("makes a new KMS key that new values use, while values under the old key stay readable", async () => {
      const cipher = cipherOf();
      const before = await cipher.sealText("c1", ref("r1:user"), "before");
      const { keyId } = await cipher.rotate(ACME);
      const start = kms.calls.length;
      const after = await cipher.sealText("c1", ref("r2:user"), "after");
      expect(kms.calls.slice(start)).toContain(`GenerateDataKey ${keyId}`);
      expect(await cipherOf().openText("c1", ref("r1:user"), before)).toBe("before");
      expect(await cipherOf().openText("c1", ref("r2:user"), after)).toBe("after");
    });
  });

  describe("currentKeys", () => {
    it("returns each tenant's newest key ARN and when it was made, from the registry", async () => {
      const keys = keysOf();
      const at = new Date("2026-03-04T05:06:07Z");
      const { keyId } = await keys.rotate(GLOBEX, at);
      expect((await keys.currentKeys()).find((k) => k.tenant.tenant === GLOBEX.tenant)).toEqual({ tenant: GLOBEX, keyId, createdAt: at });
    });
  });

  describe("shred", () => {
    it("schedules every key of the tenant for deletion, returns the receipt, and leaves its values undecryptable", async () => {
      const cipher = cipherOf();
      const acme = await cipher.sealText("c1", ref("s1:user"), "acme's");
      const globex = await cipher.sealText("g1", ref("s1:user"), "globex's");
      const arns = (await database.db.collection<ContentKeyDocument>(CONTENT_KEYS_COLLECTION).findOne({ _id: '["teams","acme-tenant"]' }))?.keys.map(
        (k) => k.arn,
      );
      const now = new Date();
      const receipt = await keysOf().shred(ACME, now);
      expect(receipt.keySource).toBe("kms");
      expect(receipt.keys).toEqual(arns);
      expect(receipt.finalAt.getTime() - now.getTime()).toBeGreaterThan(6.9 * 86_400_000);
      for (const arn of arns ?? []) expect(kms.calls).toContain(`ScheduleKeyDeletion ${arn}`);
      const error = await cipherOf()
        .openText("c1", ref("s1:user"), acme)
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ContentRefusedError);
      expect((error as ContentRefusedError).reason).toBe("undecryptable");
      expect(await cipherOf().openText("g1", ref("s1:user"), globex)).toBe("globex's");
    });
  });
});
