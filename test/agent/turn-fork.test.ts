import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TurnFork } from "../../lib/agent/turn-fork.js";
import { createApp, type App } from "../../lib/app.js";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import { loadConfig } from "../../lib/config/config.js";
import { NotLatestTurnError } from "../../lib/errors.js";
import { useTestDatabase } from "../support/store-fixture.js";
import { mongoUri } from "../support/mongo.js";

const caller: Caller = { principal: apiPrincipal("alice", "acme"), roles: [] };
const database = useTestDatabase("turn_fork", { clearBeforeEach: false });
let app: App;
let fork: TurnFork;
beforeAll(async () => {
  app = await createApp(loadConfig({ MONGODB_URI: mongoUri(), MONGODB_DB: database.dbName }), { mongoClient: database.client, tools: [] });
  fork = new TurnFork({ graph: app.runner["deps"].graph, turns: app.database.turns, messages: app.database.messages });
});
afterAll(() => app.close());

async function conversationWith(questions: string[]): Promise<{ conversationId: string; turnIds: string[] }> {
  const { _id: conversationId } = await app.database.conversations.create(caller.principal);
  const turnIds = [];
  for (const content of questions) {
    const turnId = randomUUID();
    await app.runner.run({ conversationId, caller, content, turnId });
    turnIds.push(turnId);
  }
  return { conversationId, turnIds };
}

describe("TurnFork", () => {
  describe("assertReplaceable", () => {
    it("accepts the latest finished turn", async () => {
      const { conversationId, turnIds } = await conversationWith(["one", "two"]);
      await expect(fork.assertReplaceable(conversationId, turnIds[1])).resolves.toBeUndefined();
    });

    it("throws NotLatestTurnError for an earlier turn, or one of another conversation", async () => {
      const { conversationId, turnIds } = await conversationWith(["one", "two"]);
      const other = await conversationWith(["three"]);
      await expect(fork.assertReplaceable(conversationId, turnIds[0])).rejects.toThrow(NotLatestTurnError);
      await expect(fork.assertReplaceable(conversationId, other.turnIds[0])).rejects.toThrow(NotLatestTurnError);
    });
  });

  describe("forkPoint", () => {
    it("returns the checkpoint at the turn boundary before the replaced question, removing nothing", async () => {
      const { conversationId, turnIds } = await conversationWith(["one", "two"]);
      const point = await fork.forkPoint(conversationId, turnIds[1]);
      expect(point.remove).toEqual([]);
      const at = await app.database.checkpointer.getTuple({ configurable: { thread_id: conversationId, checkpoint_id: point.checkpointId } });
      const ids = (at!.checkpoint.channel_values.messages as { id?: string }[]).map((m) => m.id);
      expect(ids[0]).toBe(`${turnIds[0]}:user`);
      expect(ids).not.toContain(`${turnIds[1]}:user`);
    });

    it("returns the start of the thread for its first turn", async () => {
      const { conversationId, turnIds } = await conversationWith(["one"]);
      const point = await fork.forkPoint(conversationId, turnIds[0]);
      expect(point.remove).toEqual([]);
      const at = await app.database.checkpointer.getTuple({ configurable: { thread_id: conversationId, checkpoint_id: point.checkpointId } });
      expect(at!.checkpoint.channel_values.messages ?? []).toEqual([]);
    });
  });
});
