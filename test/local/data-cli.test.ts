import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { AuditLog } from "../../lib/audit/audit-log.js";
import { apiPrincipal } from "../../lib/auth/principal.js";
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

  it("exits 1 with one line for a command line that names neither a tenant nor a user", async () => {
    const { code, errors } = await runCli(CLI, ["erase", "--issuer", "api"], { MONGODB_URI: mongoUri(), MONGODB_DB: "unused" });
    expect(code).toBe(1);
    expect(errors).toEqual([expect.stringContaining("name a tenant (--tenant), a user (--subject), or both")]);
  });
});
