import { mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { randomUUID } from "node:crypto";
import { BSON, MongoClient } from "mongodb";
import { importData, openedForExport, readExport, writeExport, MANIFEST_FILE } from "../../lib/lifecycle/exporter.js";
import { dropKnownCollections } from "../support/drop-collections.js";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { mongoUri } from "../support/mongo.js";

let t: TestServer;
let inspector: MongoClient;
const fresh: string[] = [];

beforeAll(async () => {
  t = await startTestServer({ TOOL_APPROVALS: JSON.stringify({ create_follow_up: { require: "always" } }), VIEW_TOOL_OUTPUT_TOKENS: "20" });
  inspector = await new MongoClient(mongoUri()).connect();
});

afterAll(async () => {
  for (const name of fresh) await dropKnownCollections(inspector.db(name));
  await inspector?.close();
  await t?.close();
});

const user = { kind: "user" as const, issuer: "api" as const, tenant: "acme", subject: "ada" };

/** Ada's data: two conversations, keyed turns, a decided approval and its follow-up, an offloaded output; Ben's beside it. */
async function seed(): Promise<void> {
  const ada = await t.token("ada", { tenant: "acme" });
  for (let i = 0; i < 2; i++) {
    const id = (await t.call("POST", "/v1/conversations", { token: ada })).body.conversationId as string;
    await t.call("POST", `/v1/conversations/${id}/messages`, { token: ada, json: { content: `question ${i}` }, headers: { "idempotency-key": `k${i}` } });
    const paused = await t.call("POST", `/v1/conversations/${id}/messages`, { token: ada, json: { content: 'create_follow_up {"title": "call"}' } });
    const [approval] = paused.body.approvals as { approvalId: string }[];
    await t.call("POST", `/v1/conversations/${id}/approvals/${approval.approvalId}`, { token: ada, json: { decision: "approve" } });
  }
  await t.server.turnQueue.drain();
  const ben = await t.token("ben", { tenant: "acme" });
  const other = (await t.call("POST", "/v1/conversations", { token: ben })).body.conversationId as string;
  await t.call("POST", `/v1/conversations/${other}/messages`, { token: ben, json: { content: "ben's question" } });
}

describe("exporter", () => {
  describe("writeExport, readExport and importData", () => {
    it("returns into a fresh database every exported document as stored, contents decrypted: types, binaries and dates included", async () => {
      await seed();
      const dir = await mkdtemp(join(tmpdir(), "threadwise-export-"));
      const manifest = await writeExport(t.db, user, dir, new Date(), t.server.app.database.cipher);
      expect(manifest.collections).toMatchObject({
        conversations: { count: 2 },
        approvals: { count: 2 },
        follow_ups: { count: 2 },
        idempotency: { count: expect.any(Number) },
        checkpoints: { count: expect.any(Number) },
        checkpoint_blobs: { count: expect.any(Number) },
        artifacts: { count: expect.any(Number) },
      });
      expect(JSON.stringify(manifest)).not.toContain("ben");

      const dbName = `import_${randomUUID().slice(0, 8)}`;
      fresh.push(dbName);
      const target = inspector.db(dbName);
      const { manifest: read, contents } = await readExport(dir);
      const inserted = await importData(target, read, contents);

      expect(inserted).toEqual(Object.fromEntries(Object.entries(manifest.collections).map(([name, c]) => [name, c.count])));
      for (const name of Object.keys(manifest.collections)) {
        const copied = await target.collection(name).find({}).sort({ _id: 1 }).toArray();
        const original = await t.db
          .collection(name)
          .find({ _id: { $in: copied.map((d) => d._id) } })
          .sort({ _id: 1 })
          .toArray();
        // Contents are encrypted at rest and exported decrypted, for the requester (docs/security.md).
        const cipher = t.server.app.database.cipher;
        const decrypted = await Promise.all(original.map((d) => openedForExport(name, d, cipher)));
        expect(
          copied.some((d) => Object.values(d).some((v) => cipher.isSealed(v))),
          name,
        ).toBe(false);
        expect(copied.map((d) => BSON.EJSON.stringify(d, { relaxed: false }))).toEqual(decrypted.map((d) => BSON.EJSON.stringify(d, { relaxed: false })));
      }
    });

    it("throws and writes nothing for an export whose file was changed, or into a database that holds its collections", async () => {
      const dir = await mkdtemp(join(tmpdir(), "threadwise-export-"));
      const manifest = await writeExport(t.db, user, dir, new Date(), t.server.app.database.cipher);
      const file = join(dir, "messages.ndjson");
      const original = await readFile(file, "utf8");
      await writeFile(file, original.replace("question 0", "question X"));
      const dbName = `import_${randomUUID().slice(0, 8)}`;
      fresh.push(dbName);
      const target = inspector.db(dbName);
      const changed = await readExport(dir);
      await expect(importData(target, changed.manifest, changed.contents)).rejects.toMatchObject({ name: "ValidationError" });
      expect(await target.collection("conversations").countDocuments()).toBe(0);

      await writeFile(file, original);
      await expect(importData(t.db, manifest, (await readExport(dir)).contents)).rejects.toMatchObject({ name: "ConflictError" });
      const forged = { ...manifest, target: { ...user, subject: "someone" } };
      await writeFile(join(dir, MANIFEST_FILE), JSON.stringify(forged));
      await expect(importData(target, forged, (await readExport(dir)).contents)).rejects.toMatchObject({ name: "ValidationError" });
    });
  });
});
