import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EndOfTurn } from "../../lib/agent/end-of-turn.js";
import { createApp, type App } from "../../lib/app.js";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import { loadConfig } from "../../lib/config/config.js";
import type { StructuredLogger } from "../../lib/logger.js";
import { TurnIndexer } from "../../lib/recall/turn-indexer.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import { useTestDatabase } from "../support/store-fixture.js";
import { mongoUri } from "../support/mongo.js";

const caller: Caller = { principal: apiPrincipal("alice", "acme"), roles: [] };
const database = useTestDatabase("end_of_turn", { clearBeforeEach: false });
let app: App;
beforeAll(async () => {
  app = await createApp(loadConfig({ MONGODB_URI: mongoUri(), MONGODB_DB: database.dbName }), { mongoClient: database.client, tools: [] });
});
afterAll(() => app.close());

/** A conversation with a finished turn whose end-of-turn work is undone: no recall entry, no retention renewal. */
async function finishedTurnUndone(): Promise<string> {
  const { _id: conversationId } = await app.database.conversations.create(caller.principal);
  await app.runner.run({ conversationId, caller, content: "hello", turnId: randomUUID() });
  await database.db.collection(COLLECTIONS.recallTurns).deleteMany({ conversationId });
  await database.db.collection(COLLECTIONS.recallIndex).deleteMany({ conversationId });
  await database.db.collection<{ _id: string }>(COLLECTIONS.conversations).updateOne({ _id: conversationId }, { $unset: { retentionRenewedAt: 1 } });
  return conversationId;
}

const renewedAt = async (conversationId: string) =>
  (await database.db.collection<{ _id: string; retentionRenewedAt?: Date }>(COLLECTIONS.conversations).findOne({ _id: conversationId }))?.retentionRenewedAt;

describe("EndOfTurn", () => {
  describe("run", () => {
    it("indexes the finished turn for recall and renews the conversation's retention", async () => {
      const conversationId = await finishedTurnUndone();
      const indexer = new TurnIndexer({ index: app.database.recall, messages: app.database.messages, turns: app.database.turns });
      const step = new EndOfTurn({ indexer, checkpoints: app.database.checkpointer, retention: app.database.retention });
      const fence = await app.database.lease.acquire(conversationId, randomUUID());
      await step.run(conversationId, fence);
      expect(await database.db.collection(COLLECTIONS.recallTurns).countDocuments({ conversationId })).toBe(1);
      expect(await renewedAt(conversationId)).toBeInstanceOf(Date);
    });

    it("still prunes and renews when indexing fails, and logs the failure by its error's name only", async () => {
      const conversationId = await finishedTurnUndone();
      const warnings: [string, Record<string, unknown>][] = [];
      const logger = { warn: (message: string, fields: Record<string, unknown>) => warnings.push([message, fields]) } as unknown as StructuredLogger;
      const failing = { indexFinishedTurns: () => Promise.reject(new RangeError("the index is full: secret text")) };
      const step = new EndOfTurn({ indexer: failing, checkpoints: app.database.checkpointer, retention: app.database.retention, logger });
      const fence = await app.database.lease.acquire(conversationId, randomUUID());
      await step.run(conversationId, fence);
      expect(await renewedAt(conversationId)).toBeInstanceOf(Date);
      expect(warnings).toEqual([["recall indexing failed", { conversationId, error: "RangeError" }]]);
    });

    it("throws when the turn lost the conversation: the prune is fenced and nothing is renewed", async () => {
      const conversationId = await finishedTurnUndone();
      const indexer = new TurnIndexer({ index: app.database.recall, messages: app.database.messages, turns: app.database.turns });
      const step = new EndOfTurn({ indexer, checkpoints: app.database.checkpointer, retention: app.database.retention });
      const stale = await app.database.lease.acquire(conversationId, randomUUID());
      await app.database.lease.release(stale);
      const later = await app.database.lease.acquire(conversationId, randomUUID());
      await app.database.checkpointer.claimThread(conversationId, later.epoch as number);
      await expect(step.run(conversationId, stale)).rejects.toThrow();
      expect(await renewedAt(conversationId)).toBeUndefined();
    });
  });
});
