import { describe, expect, it } from "vitest";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { DATABASE_SETUP_VERSION, DatabaseSetupError, ThreadwiseDatabase } from "../../lib/store/database.js";
import { heldFence } from "../support/fences.js";
import { useStoreFixture } from "../support/store-fixture.js";

// `setup()` runs once before the file (the fixture); the set-up record is emptied before each test like every collection.
const { stores } = useStoreFixture("database", (db) => ({ database: new ThreadwiseDatabase(db.client, { dbName: db.databaseName }) }));
const { database } = stores;
const setupRecord = () => database.db.collection(COLLECTIONS.setup);

describe("ThreadwiseDatabase", () => {
  describe("setup", () => {
    it("records the set-up version, so isSetUp returns true after it and false before", async () => {
      expect(await database.isSetUp()).toBe(false);
      await database.setup();
      expect(await setupRecord().findOne({})).toMatchObject({ _id: "indexes", version: DATABASE_SETUP_VERSION });
      expect(await database.isSetUp()).toBe(true);
    });

    it("creates the indexes of every store, of the follow-ups and of the extra steps given", async () => {
      let extraRan = false;
      await database.setup([
        async () => {
          extraRan = true;
        },
      ]);
      expect(extraRan).toBe(true);
      expect((await database.db.collection(COLLECTIONS.followUps).indexes()).map((i) => i.name)).toContain("conversation");
      expect((await database.db.collection(COLLECTIONS.approvals).indexes()).map((i) => i.name)).toContain("pending_deadline");
    });

    it("throws DatabaseSetupError with the first failure as cause, and records nothing, when a step fails", async () => {
      const failure = new Error("index refused");
      const error = await database.setup([() => Promise.reject(failure)]).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DatabaseSetupError);
      expect(error).toMatchObject({ message: "database setup failed (1 errors)", cause: failure });
      expect(await database.isSetUp()).toBe(false);
    });
  });

  describe("isSetUp", () => {
    it("returns false for a record of an older version and true for a later one", async () => {
      await setupRecord().insertOne({ _id: "indexes" as never, version: DATABASE_SETUP_VERSION - 1 });
      expect(await database.isSetUp()).toBe(false);
      await setupRecord().updateOne({ _id: "indexes" as never }, { $set: { version: DATABASE_SETUP_VERSION + 1 } });
      expect(await database.isSetUp()).toBe(true);
    });
  });

  describe("deleteConversation", () => {
    it("removes the conversation's documents from each collection and keeps another conversation's", async () => {
      const owner = { issuer: "api", tenant: null, subject: "ada" } as const;
      const [kept, gone] = (await Promise.all([database.conversations.create(owner), database.conversations.create(owner)])).map((c) => c._id);
      for (const id of [kept, gone]) {
        await database.messages.append({ turnId: `${id}-t`, seq: 1, role: "user", content: "q" }, heldFence(id));
        await database.db.collection(COLLECTIONS.followUps).insertOne({ conversationId: id, title: "x" });
      }
      await database.deleteConversation(gone);
      expect(await database.conversations.get(gone)).toBeNull();
      expect(await database.messages.list(gone)).toEqual([]);
      expect(await database.db.collection(COLLECTIONS.followUps).countDocuments({ conversationId: gone })).toBe(0);
      expect(await database.conversations.get(kept)).not.toBeNull();
      expect(await database.messages.list(kept)).toHaveLength(1);
      expect(await database.db.collection(COLLECTIONS.followUps).countDocuments({ conversationId: kept })).toBe(1);
    });
  });
});
