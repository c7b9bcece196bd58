import { MongoServerError, type Db } from "mongodb";
import { COLLECTIONS } from "../collections.js";
import { legacyOwner } from "../conversation-store.js";
import type { Migration } from "./migration.js";

/** The index of releases before principals, on `ownerId`: its presence marks a database not migrated yet. */
const LEGACY_OWNER_INDEX = "owner_recent";
const INDEX_NOT_FOUND = 27;
const COMMAND_NOT_FOUND = 59;

/**
 * Gives conversations stored before principals their owner (see `legacyOwner`): the old index
 * marks a database not yet migrated and is dropped last. Concurrent runs write the same owners.
 */
export const conversationOwners: Migration = {
  version: 1,
  name: "conversation-owners",
  async up(db: Db) {
    const collection = db.collection(COLLECTIONS.conversations);
    const indexes = await collection
      .listIndexes()
      .toArray()
      .catch(() => []);
    if (!indexes.some((index) => index.name === LEGACY_OWNER_INDEX)) return true;
    const legacy = collection.find({ owner: { $exists: false } }, { projection: { ownerId: 1, tenantId: 1, channel: 1 } });
    for await (const doc of legacy) {
      const owner = legacyOwner(doc as Parameters<typeof legacyOwner>[0]);
      if (owner) await collection.updateOne({ _id: doc._id, owner: { $exists: false } }, { $set: { owner }, $unset: { ownerId: "", tenantId: "" } });
    }
    await collection.dropIndex(LEGACY_OWNER_INDEX).catch((error: unknown) => {
      // Dropped by a concurrent run (IndexNotFound), or a server without dropIndexes (the embedded one).
      if (!(error instanceof MongoServerError) || (error.code !== INDEX_NOT_FOUND && error.code !== COMMAND_NOT_FOUND)) throw error;
    });
    return true;
  },
};
