import { describe, expect, it } from "vitest";
import { AuditLog, GENESIS_HASH, recordHash, type AuditEntry, type AuditRecord } from "../../lib/audit/audit-log.js";
import type { StructuredLogger } from "../../lib/logger.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { useStoreFixture } from "../support/store-fixture.js";

const lines: { message: string; fields: Record<string, unknown> }[] = [];
const logger: StructuredLogger = { info: (message, fields) => lines.push({ message, fields }), warn: () => undefined, error: () => undefined };
const { stores, database } = useStoreFixture("audit_log", (db) => ({ audit: new AuditLog(db, { retentionDays: 30, logger }) }));
const { audit } = stores;

const acme = { issuer: "api", tenant: "acme" };
const entry = (overrides: Partial<AuditEntry> = {}): AuditEntry => ({
  action: "limits.set",
  actor: { issuer: "api", tenant: "acme", subject: "root" },
  tenant: acme,
  resource: { kind: "user", subject: "ada" },
  channel: "api",
  requestId: "r-1",
  before: null,
  after: { turnsPerMinute: 3 },
  ...overrides,
});

describe("AuditLog", () => {
  describe("append", () => {
    it("returns records linked in one chain per tenant: seq 1, 2… each naming the hash of the one before", async () => {
      const first = await audit.append(entry());
      const second = await audit.append(entry({ after: { turnsPerMinute: 4 } }));
      const other = await audit.append(entry({ tenant: { issuer: "api", tenant: "globex" } }));
      expect([first.seq, first.prevHash]).toEqual([1, GENESIS_HASH]);
      expect([second.seq, second.prevHash]).toEqual([2, first.hash]);
      expect([other.seq, other.prevHash]).toEqual([1, GENESIS_HASH]);
      expect(second.expiresAt.getTime() - second.at.getTime()).toBe(30 * 86_400_000);
    });

    it("never forks the chain: twenty writers appending at once get twenty places, and the chain verifies", async () => {
      const records = await Promise.all(Array.from({ length: 20 }, (_, i) => audit.append(entry({ requestId: `r-${i}` }))));
      expect(records.map((r) => r.seq).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      expect(await audit.verify(acme)).toEqual({ chains: 1, records: 20, problems: [] });
    });

    it("logs a line per record with ids and the hash, never the values before and after", async () => {
      lines.length = 0;
      const record = await audit.append(entry({ before: { secretish: "value-before" } }));
      expect(lines).toEqual([{ message: "audit", fields: expect.objectContaining({ action: "limits.set", seq: record.seq, hash: record.hash }) }]);
      expect(JSON.stringify(lines)).not.toContain("value-before");
    });
  });

  describe("verify", () => {
    it("returns no problem for an untouched log", async () => {
      for (let i = 0; i < 3; i++) await audit.append(entry({ requestId: `r-${i}` }));
      expect((await audit.verify()).problems).toEqual([]);
    });

    it("returns a hash mismatch for a record changed in place, naming its place", async () => {
      for (let i = 0; i < 3; i++) await audit.append(entry({ requestId: `r-${i}` }));
      await database.db.collection(COLLECTIONS.auditLog).updateOne({ seq: 2 }, { $set: { "after.turnsPerMinute": 1000 } });
      expect((await audit.verify()).problems).toEqual([{ chain: JSON.stringify(["api", "acme"]), seq: 2, reason: "hash_mismatch" }]);
    });

    it("returns a broken link after a record rewritten with a hash of its own, and a gap where a record was removed", async () => {
      for (let i = 0; i < 5; i++) await audit.append(entry({ requestId: `r-${i}` }));
      const log = database.db.collection<AuditRecord>(COLLECTIONS.auditLog);
      const second = (await log.findOne({ seq: 2 })) as AuditRecord;
      // Whoever rewrites a record and recomputes its hash still breaks the next record's link.
      const { _id, hash, expiresAt, ...fields } = { ...second, actor: { issuer: "api", tenant: "acme", subject: "someone-else" } };
      await log.replaceOne({ _id }, { ...fields, hash: recordHash(fields), expiresAt });
      await log.deleteOne({ seq: 4 });
      const problems = (await audit.verify()).problems.map((p) => [p.seq, p.reason]);
      expect(problems).toEqual([
        [3, "broken_link"],
        [5, "sequence_gap"],
      ]);
    });
  });

  describe("list", () => {
    it("returns a tenant's records after a sequence number, in chain order, and no other tenant's", async () => {
      for (let i = 0; i < 3; i++) await audit.append(entry({ requestId: `r-${i}` }));
      await audit.append(entry({ tenant: { issuer: "api", tenant: "globex" } }));
      expect((await audit.list(acme, { afterSeq: 1, limit: 10 })).map((r) => r.seq)).toEqual([2, 3]);
    });
  });
});
