import { describe, expect, it } from "vitest";
import { apiPrincipal, slackPrincipal, type Principal } from "../../../lib/auth/principal.js";
import { NotFoundError } from "../../../lib/errors.js";
import { setupDatabase } from "../../../lib/setup-database.js";
import { ThreadwiseDatabase } from "../../../lib/store/database.js";
import { useTestDatabase } from "../../support/store-fixture.js";

const database = useTestDatabase("migration_owners");
const as = (principal: Principal) => ({ principal, roles: [] });

describe("migration 001 conversation-owners", () => {
  describe("up (run by setupDatabase, npm run db:setup)", () => {
    it("gives conversations stored before principals their owner, by channel binding, once", async () => {
      // The old format, written with the raw driver: `ownerId` and `tenantId` strings, and their index.
      const db = database.client.db(`${database.db.databaseName}_legacy`);
      const collection = db.collection("conversations");
      await collection.createIndex({ ownerId: 1, tenantId: 1, updatedAt: -1, _id: -1 }, { name: "owner_recent" });
      const at = new Date();
      const common = { title: null, createdAt: at, updatedAt: at, lease: null };
      await collection.insertMany([
        { _id: "c-api", ownerId: "alice", tenantId: "acme", channel: { channel: "api" }, ...common },
        // Made through the API by a token whose subject named a workspace: it stays an API principal's.
        { _id: "c-borrowed", ownerId: "slack:T0", tenantId: "slack:T0", channel: { channel: "api" }, ...common },
        { _id: "c-slack", ownerId: "slack:T0", tenantId: "slack:T0", channel: { channel: "slack", key: "slack:T0:C0:1.1" }, ...common },
        { _id: "c-odd", ownerId: "someone", tenantId: null, channel: { channel: "slack", key: "slack:T0:C0:2.2" }, ...common },
      ] as never[]);
      const threadwise = new ThreadwiseDatabase(database.client, { dbName: db.databaseName });
      await setupDatabase(threadwise);
      await setupDatabase(threadwise);
      const store = threadwise.conversations;
      await expect(store.getFor("c-api", as(apiPrincipal("alice", "acme")), "read")).resolves.toBeDefined();
      await expect(store.getFor("c-borrowed", as(apiPrincipal("slack:T0", "slack:T0")), "read")).resolves.toBeDefined();
      await expect(store.getFor("c-slack", as(slackPrincipal("T0", "U1")), "read")).resolves.toBeDefined();
      await expect(store.getFor("c-slack", as(apiPrincipal("slack:T0", "slack:T0")), "read")).rejects.toBeInstanceOf(NotFoundError);
      expect(await collection.findOne({ _id: "c-odd" as never })).not.toHaveProperty("owner");
      expect(await db.collection("setup").findOne({ _id: "schema" as never })).toMatchObject({
        schemaVersion: 2,
        applied: { "001": expect.objectContaining({ name: "conversation-owners" }), "002": expect.objectContaining({ name: "compact-stored-lists" }) },
      });
      await collection.deleteMany({});
    });
  });
});
