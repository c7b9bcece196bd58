import { MongoServerError, type Db } from "mongodb";
import type { Owner } from "../../auth/principal.js";
import { COLLECTIONS } from "../collections.js";
import type { Migration } from "./migration.js";

/** The index of releases before principals, on `ownerId`: its presence marks a database not migrated yet. */
const LEGACY_OWNER_INDEX = "owner_recent";
const INDEX_NOT_FOUND = 27;
const COMMAND_NOT_FOUND = 59;

/**
 * The owner of a conversation stored before principals, from its channel binding (set by the
 * server, never by a token): API conversations belong to the token's subject and tenant, channel
 * ones to their workspace or tenant as the channel wrote them. Undefined when the fields do not
 * fit their channel: such a conversation stays unreachable.
 */
export function legacyOwner(doc: { ownerId?: unknown; tenantId?: unknown; channel?: { channel?: unknown } }): Owner | undefined {
  const { ownerId, tenantId } = doc;
  if (typeof ownerId !== "string" || ownerId.length === 0 || (tenantId !== null && typeof tenantId !== "string")) return undefined;
  const channel = doc.channel?.channel;
  if (channel === "api") return { issuer: "api", tenant: tenantId || null, subject: ownerId };
  if (channel !== "slack" && channel !== "teams") return undefined;
  const prefix = `${channel}:`;
  if (!ownerId.startsWith(prefix) || ownerId.length === prefix.length) return undefined;
  if (tenantId === ownerId) return { issuer: channel, tenant: ownerId.slice(prefix.length), subject: null };
  return channel === "teams" && tenantId === null ? { issuer: "teams", tenant: null, subject: ownerId.slice(prefix.length) } : undefined;
}

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
