import type { Collection } from "mongodb";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { apiPrincipal } from "../../lib/auth/principal.js";
import { ConflictError } from "../../lib/errors.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { ConversationStore, type ConversationDocument, type Lease } from "../../lib/store/conversation-store.js";
import { ConversationLease, DEFAULT_LEASE_TTL_MS, MAX_RETRY_AFTER_S } from "../../lib/store/lease.js";
import { openTestDatabase, type TestDatabase } from "../support/mongo.js";

const NOW = new Date("2026-03-01T12:00:00.000Z");
const TTL_MS = 30_000;
const at = (offsetMs: number) => new Date(NOW.getTime() + offsetMs);

let database: TestDatabase;
let conversations: Collection<ConversationDocument>;
let store: ConversationStore;

beforeAll(async () => {
  database = await openTestDatabase("lease");
  conversations = database.db.collection<ConversationDocument>(COLLECTIONS.conversations);
  store = new ConversationStore(database.db);
});

afterAll(async () => {
  await database.cleanup();
});

/** A conversation whose `lease` field is as given; `undefined` leaves the field out. */
async function conversationWith(lease: Lease | null | undefined): Promise<string> {
  const { _id } = await store.create(apiPrincipal("alice"));
  if (lease === undefined) await conversations.updateOne({ _id }, { $unset: { lease: "" } });
  else await conversations.updateOne({ _id }, { $set: { lease } });
  return _id;
}

async function leaseOf(conversationId: string): Promise<Lease | null | undefined> {
  return (await conversations.findOne({ _id: conversationId }))?.lease;
}

async function conflictOf(attempt: Promise<void>): Promise<ConflictError> {
  const error = await attempt.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error).toBeInstanceOf(ConflictError);
  return error as ConflictError;
}

describe("ConversationLease", () => {
  describe("acquire", () => {
    it("takes a lease that lasts the TTL from the given time", async () => {
      const id = await conversationWith(null);
      await new ConversationLease(conversations, TTL_MS).acquire(id, "turn-a", NOW);
      expect(await leaseOf(id)).toEqual({ holder: "turn-a", expiresAt: at(TTL_MS) });
    });

    it("lasts DEFAULT_LEASE_TTL_MS without a TTL of its own", async () => {
      const id = await conversationWith(null);
      await new ConversationLease(conversations).acquire(id, "turn-a", NOW);
      expect(await leaseOf(id)).toEqual({ holder: "turn-a", expiresAt: at(DEFAULT_LEASE_TTL_MS) });
    });

    it("takes a lease on a conversation that has never had the field", async () => {
      const id = await conversationWith(undefined);
      await new ConversationLease(conversations, TTL_MS).acquire(id, "turn-a", NOW);
      expect(await leaseOf(id)).toEqual({ holder: "turn-a", expiresAt: at(TTL_MS) });
    });

    it("takes over a lease that expires exactly now, and one that expired before", async () => {
      for (const expiredBy of [0, 1, TTL_MS]) {
        const id = await conversationWith({ holder: "crashed", expiresAt: at(-expiredBy) });
        await new ConversationLease(conversations, TTL_MS).acquire(id, "turn-b", NOW);
        expect(await leaseOf(id)).toEqual({ holder: "turn-b", expiresAt: at(TTL_MS) });
      }
    });

    it("renews the lease for the holder that has it", async () => {
      const id = await conversationWith({ holder: "turn-a", expiresAt: at(1_000) });
      await new ConversationLease(conversations, TTL_MS).acquire(id, "turn-a", NOW);
      expect(await leaseOf(id)).toEqual({ holder: "turn-a", expiresAt: at(TTL_MS) });
    });

    it("throws ConflictError and leaves the lease alone when another holder's lease has not expired", async () => {
      const held = { holder: "turn-a", expiresAt: at(1) };
      const id = await conversationWith(held);
      const error = await conflictOf(new ConversationLease(conversations, TTL_MS).acquire(id, "turn-b", NOW));
      expect(error.message).toBe("a turn is already running on this conversation");
      expect(await leaseOf(id)).toEqual(held);
    });

    it("throws ConflictError with Retry-After the lease's remaining seconds, rounded up, from 1 to MAX_RETRY_AFTER_S", async () => {
      const lease = new ConversationLease(conversations, TTL_MS);
      const cases: [remainingMs: number, retryAfter: number][] = [
        [1, 1],
        [1_000, 1],
        [1_001, 2],
        [2_500, 3],
        [MAX_RETRY_AFTER_S * 1_000, MAX_RETRY_AFTER_S],
        [MAX_RETRY_AFTER_S * 1_000 + 1, MAX_RETRY_AFTER_S],
        [60_000, MAX_RETRY_AFTER_S],
      ];
      for (const [remainingMs, retryAfter] of cases) {
        const id = await conversationWith({ holder: "turn-a", expiresAt: at(remainingMs) });
        const error = await conflictOf(lease.acquire(id, "turn-b", NOW));
        expect({ remainingMs, retryAfter: error.retryAfterSeconds }).toEqual({ remainingMs, retryAfter });
      }
    });

    it("throws ConflictError with Retry-After of the TTL, capped, for a conversation that does not exist", async () => {
      const short = await conflictOf(new ConversationLease(conversations, 3_000).acquire("no-such-conversation", "turn-a", NOW));
      expect(short.retryAfterSeconds).toBe(3);
      const long = await conflictOf(new ConversationLease(conversations, 60_000).acquire("no-such-conversation", "turn-a", NOW));
      expect(long.retryAfterSeconds).toBe(MAX_RETRY_AFTER_S);
    });
  });

  describe("release", () => {
    it("clears the lease of that conversation for its holder, so another holder can take it at once", async () => {
      const lease = new ConversationLease(conversations, TTL_MS);
      const otherConversation = await conversationWith({ holder: "turn-a", expiresAt: at(TTL_MS) });
      const id = await conversationWith(null);
      await lease.acquire(id, "turn-a", NOW);
      await lease.release(id, "turn-a");
      expect(await leaseOf(id)).toBeNull();
      expect(await leaseOf(otherConversation)).toEqual({ holder: "turn-a", expiresAt: at(TTL_MS) });
      await lease.acquire(id, "turn-b", NOW);
      expect(await leaseOf(id)).toEqual({ holder: "turn-b", expiresAt: at(TTL_MS) });
    });

    it("leaves another holder's lease alone", async () => {
      const lease = new ConversationLease(conversations, TTL_MS);
      const id = await conversationWith(null);
      await lease.acquire(id, "turn-a", NOW);
      await lease.release(id, "turn-b");
      expect(await leaseOf(id)).toEqual({ holder: "turn-a", expiresAt: at(TTL_MS) });
    });
  });
});
