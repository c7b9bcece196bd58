import { randomUUID } from "node:crypto";
import { MongoClient } from "mongodb";
import { beforeAll, describe, expect, it } from "vitest";
import type { App } from "../../lib/app.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { RetentionPolicy } from "../../lib/store/retention.js";
import type { Caller } from "../../lib/auth/principal.js";
import { useTestApp } from "../support/app-fixture.js";
import { mongoUri } from "../support/mongo.js";
import { bigReport } from "../support/test-tools.js";
import { apiPrincipal } from "../../lib/auth/principal.js";

const caller: Caller = { principal: apiPrincipal("alice"), roles: [] };
const testApp = useTestApp("retention", { clearBeforeEach: false, env: { RETENTION_DAYS: "7" } });
const { client, dbName } = testApp.database;
const RETAINED = [
  COLLECTIONS.conversations,
  COLLECTIONS.messages,
  COLLECTIONS.turns,
  COLLECTIONS.modelCalls,
  COLLECTIONS.artifacts,
  COLLECTIONS.checkpoints,
  COLLECTIONS.checkpointWrites,
  COLLECTIONS.checkpointBlobs,
  COLLECTIONS.recallTurns,
  COLLECTIONS.recallIndex,
];
let app: App;

/** The conversation's documents in one of the RETAINED collections (checkpoints call it the thread). */
function ownedBy(name: string, conversationId: string) {
  const field = name === COLLECTIONS.conversations ? "_id" : name.startsWith("checkpoint") ? "thread_id" : "conversationId";
  return client
    .db(dbName)
    .collection(name)
    .find({ [field]: conversationId });
}

beforeAll(async () => {
  app = await testApp.appWith({ tools: [bigReport] });
});

describe("RetentionPolicy", () => {
  describe("setup", () => {
    it("creates a TTL index on every collection that holds a conversation", async () => {
      for (const name of RETAINED) {
        const indexes = await client.db(dbName).collection(name).listIndexes().toArray();
        const ttl = indexes.find((i) => Object.keys(i.key).join() === "expiresAt");
        expect(ttl, name).toMatchObject({ expireAfterSeconds: 0 });
        // What `touch` filters on every turn (the owner's documents by expiry), except where the owner is `_id`.
        if (name !== "conversations") expect(indexes.find((i) => i.name === "retention_owner")?.key, name).toMatchObject({ expiresAt: 1 });
      }
    });
  });

  describe("touch", () => {
    it("gives every document of an active conversation an expiry a full period ahead", async () => {
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      const before = Date.now();
      await app.runner.run({ conversationId, caller, content: 'big_report {"rows": 3000}', turnId: randomUUID() });
      const week = 7 * 86_400_000;
      for (const name of RETAINED) {
        const docs = await ownedBy(name, conversationId).toArray();
        expect(docs.length, name).toBeGreaterThan(0);
        for (const doc of docs) {
          expect(doc.expiresAt, name).toBeInstanceOf(Date);
          expect(doc.expiresAt.getTime() - before, name).toBeGreaterThanOrEqual(week - 1_000);
        }
      }
    });

    it("leaves expiries far from due untouched, so a busy conversation is not rewritten every turn", async () => {
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      await app.runner.run({ conversationId, caller, content: "hello", turnId: randomUUID() });
      const first = await client.db(dbName).collection(COLLECTIONS.messages).findOne({ conversationId });
      await app.database.retention.touch(conversationId, new Date(Date.now() + 86_400_000));
      const unchanged = await client.db(dbName).collection(COLLECTIONS.messages).findOne({ _id: first!._id });
      expect(unchanged!.expiresAt).toEqual(first!.expiresAt);
      await app.database.retention.touch(conversationId, new Date(Date.now() + 5 * 86_400_000));
      const renewed = await client.db(dbName).collection(COLLECTIONS.messages).findOne({ _id: first!._id });
      expect(renewed!.expiresAt.getTime()).toBeGreaterThan(first!.expiresAt.getTime());
    });

    it("keeps every document of an active conversation at least half a period from expiring, whenever it is touched", async () => {
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      await app.runner.run({ conversationId, caller, content: 'big_report {"rows": 3000}', turnId: randomUUID() });
      const period = app.database.retention.periodMs;
      const start = Date.now();
      // Two periods of daily-ish activity, in steps that fall on both sides of every renewal.
      for (let step = 1; step <= 27; step++) {
        const now = new Date(start + (step * period) / 13);
        await app.database.retention.touch(conversationId, now);
        for (const name of RETAINED) {
          const soonest = await ownedBy(name, conversationId).sort({ expiresAt: 1 }).limit(1).next();
          expect(soonest!.expiresAt.getTime() - now.getTime(), `${name} at step ${step}`).toBeGreaterThanOrEqual(period / 2);
        }
      }
    });

    it("costs a turn one read between renewals, not a write to every collection", async () => {
      const monitored = new MongoClient(mongoUri(), { monitorCommands: true });
      await monitored.connect();
      try {
        const retention = new RetentionPolicy(monitored.db(dbName), { days: 7 });
        const { _id: conversationId } = await app.database.conversations.create(caller.principal);
        await app.runner.run({ conversationId, caller, content: "hello", turnId: randomUUID() });
        const commands: string[] = [];
        monitored.on("commandStarted", (e) => commands.push(`${e.commandName} ${String(e.command[e.commandName])}`));
        const now = Date.now();
        await retention.touch(conversationId, new Date(now));
        commands.length = 0;
        await retention.touch(conversationId, new Date(now + 86_400_000));
        expect(commands).toEqual([`find ${COLLECTIONS.conversations}`]);
        commands.length = 0;
        // A quarter of the 7-day period later the renewal is due again: every collection is looked at.
        await retention.touch(conversationId, new Date(now + 2 * 86_400_000));
        expect(commands.filter((c) => c.startsWith("update")).length).toBeGreaterThanOrEqual(RETAINED.length);
      } finally {
        await monitored.close();
      }
    });
  });
});
