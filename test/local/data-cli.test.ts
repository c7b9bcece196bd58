import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { AuditLog } from "../../lib/audit/audit-log.js";
import { apiPrincipal } from "../../lib/auth/principal.js";
import { FieldCipher } from "../../lib/crypto/field-cipher.js";
import { LocalTenantKeys } from "../../lib/crypto/local-tenant-keys.js";
import { DEFAULT_LOCAL_DIR } from "../../lib/local/local-keys.js";
import { ConversationStore } from "../../lib/store/conversation-store.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { dropKnownCollections } from "../support/drop-collections.js";
import { runCli } from "../support/cli.js";
import { mongoUri } from "../support/mongo.js";
import { useTestDatabase } from "../support/store-fixture.js";

const inspector = useTestDatabase("data_cli", { clearBeforeEach: false });
const CLI = "lib/local/data-cli.ts";

describe("data-cli (npm run erase, data:export, data:import, audit:verify)", { timeout: 120_000 }, () => {
  it("audit-verify exits 0 for an untouched log and 1, naming the record, once one is changed", async () => {
    const dbName = `data_cli_${randomUUID().slice(0, 8)}`;
    const db = inspector.client.db(dbName);
    const audit = new AuditLog(db, { retentionDays: 30 });
    const actor = { issuer: "api", tenant: "acme", subject: "root" };
    for (const turnsPerMinute of [1, 2, 3]) {
      await audit.append({ action: "limits.set", actor, tenant: { issuer: "api", tenant: "acme" }, resource: {}, channel: "api", after: { turnsPerMinute } });
    }
    const env = { MONGODB_URI: mongoUri(), MONGODB_DB: dbName };
    const clean = await runCli(CLI, ["audit-verify"], env);
    expect([clean.code, JSON.parse(clean.stdout)]).toEqual([0, { chains: 1, records: 3, problems: [] }]);

    await db.collection(COLLECTIONS.auditLog).updateOne({ seq: 2 }, { $set: { "after.turnsPerMinute": 50 } });
    const tampered = await runCli(CLI, ["audit-verify"], env);
    expect(tampered.code).toBe(1);
    expect(JSON.parse(tampered.stdout).problems).toEqual([{ chain: '["api","acme"]', seq: 2, reason: "hash_mismatch" }]);
    await dropKnownCollections(db);
  });

  it("erase prints the deletion receipt of a user, the CLI named as who asked", async () => {
    const dbName = `data_cli_${randomUUID().slice(0, 8)}`;
    const db = inspector.client.db(dbName);
    await new ConversationStore(db).create(apiPrincipal("ada", "acme"));
    const { code, stdout } = await runCli(CLI, ["erase", "--issuer", "api", "--tenant", "acme", "--subject", "ada"], {
      MONGODB_URI: mongoUri(),
      MONGODB_DB: dbName,
    });
    expect(code).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ target: { kind: "user", subject: "ada" }, deleted: { conversations: 1 }, requestedBy: { issuer: "cli" } });
    expect(await db.collection(COLLECTIONS.conversations).countDocuments()).toBe(0);
    expect(await db.collection(COLLECTIONS.auditLog).countDocuments({ action: "erasure" })).toBe(1);
    await dropKnownCollections(db);
  });

  it("keys:rotate prints the new key and when it takes effect, audited as the CLI's; keys:reencrypt then re-seals with progress", async () => {
    const dbName = `data_cli_${randomUUID().slice(0, 8)}`;
    const db = inspector.client.db(dbName);
    // A tenant of its own in the repository's `.local/` keys (the CLI's), shredded after.
    const tenant = { issuer: "api" as const, tenant: `cli-${randomUUID().slice(0, 8)}` };
    const keys = new LocalTenantKeys(DEFAULT_LOCAL_DIR);
    const { _id } = await new ConversationStore(db).create(apiPrincipal("ada", tenant.tenant));
    const cipher = new FieldCipher({ keys, tenantOf: async () => tenant });
    const ref = { collection: COLLECTIONS.conversations, id: _id, field: "title" };
    await db.collection(COLLECTIONS.conversations).updateOne({ _id } as never, { $set: { title: await cipher.sealText(_id, ref, "a title") } });
    const env = { MONGODB_URI: mongoUri(), MONGODB_DB: dbName, CONTENT_DATA_KEY_MAX_AGE_SECONDS: "1" };
    try {
      const rotated = await runCli(CLI, ["rotate-key", "--issuer", "api", "--tenant", tenant.tenant], env);
      expect(rotated.code).toBe(0);
      const out = JSON.parse(rotated.stdout);
      expect(Date.parse(out.effectiveAt) - Date.parse(out.rotatedAt)).toBe(1_000);
      expect(out).toMatchObject({ tenant, keyId: (await keys.currentKeys()).find((k) => k.tenant.tenant === tenant.tenant)?.keyId });
      const record = await db.collection(COLLECTIONS.auditLog).findOne({ action: "key.rotate" });
      expect(record).toMatchObject({ actor: { issuer: "cli" }, channel: "cli", resource: { keyId: out.keyId } });
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, Date.parse(out.effectiveAt) - Date.now() + 100)));
      const run = await runCli(CLI, ["reencrypt", "--issuer", "api", "--tenant", tenant.tenant], env);
      expect(run.code).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ outcome: "done", reencryption: { status: "done", keyId: out.keyId, counts: { resealed: 1 } } });
      expect(run.errors.map((line) => JSON.parse(line))).toContainEqual({ collection: COLLECTIONS.conversations, examined: 1, resealed: 1, raced: 0 });
      const title = (await db.collection(COLLECTIONS.conversations).findOne({ _id } as never))?.title;
      expect(Buffer.from(title.value()).includes(Buffer.from(out.keyId))).toBe(true);
    } finally {
      await keys.shred(tenant);
      await dropKnownCollections(db);
    }
  });

  it("exits 1 with one line for a command line that names neither a tenant nor a user", async () => {
    const { code, errors } = await runCli(CLI, ["erase", "--issuer", "api"], { MONGODB_URI: mongoUri(), MONGODB_DB: "unused" });
    expect(code).toBe(1);
    expect(errors).toEqual([expect.stringContaining("name a tenant (--tenant), a user (--subject), or both")]);
  });
});
