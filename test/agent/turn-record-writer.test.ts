import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TurnRecordWriter } from "../../lib/agent/turn-record-writer.js";
import { apiPrincipal } from "../../lib/auth/principal.js";
import { StaleWriterError } from "../../lib/errors.js";
import { createApp, type App } from "../../lib/app.js";
import { loadConfig } from "../../lib/config/config.js";
import type { ClaimedTurn } from "../../lib/store/turn-store.js";
import type { ModelCallRecord } from "../../lib/store/turn-record.js";
import { useTestDatabase } from "../support/store-fixture.js";
import { mongoUri } from "../support/mongo.js";

const alice = apiPrincipal("alice", "acme");
const database = useTestDatabase("turn_record_writer", { clearBeforeEach: false });
let app: App;
let stores: App["database"];
beforeAll(async () => {
  app = await createApp(loadConfig({ MONGODB_URI: mongoUri(), MONGODB_DB: database.dbName }), { mongoClient: database.client, tools: [] });
  stores = app.database;
});
afterAll(() => app.close());

async function claimed() {
  const { _id: conversationId } = await stores.conversations.create(alice);
  const turnId = randomUUID();
  const fence = await stores.lease.acquire(conversationId, turnId);
  const turn = (await stores.turns.claim(turnId, fence)).turn as ClaimedTurn;
  turn.seq = await stores.turns.begin(turn, fence, alice);
  return { turn, fence, conversationId };
}

const call = (turnId: string, index: number): ModelCallRecord =>
  ({
    turnId,
    index,
    view: [],
    stats: {},
    usage: { inputTokens: 10, outputTokens: 5, cacheReadInputTokens: 0, cacheWriteInputTokens: 0 },
    toolCalls: [],
  }) as unknown as ModelCallRecord;

describe("TurnRecordWriter", () => {
  describe("modelCall", () => {
    it("records the call on the turn it was made for, once per index", async () => {
      const { turn, fence } = await claimed();
      const writer = new TurnRecordWriter(stores.turns, turn, fence);
      await writer.modelCall(call(turn._id, 0));
      await writer.modelCall(call(turn._id, 0));
      expect((await stores.turns.listCalls(turn._id)).map((c) => c.index)).toEqual([0]);
    });

    it("throws StaleWriterError once a later attempt holds the conversation, and records nothing", async () => {
      const { turn, fence, conversationId } = await claimed();
      const writer = new TurnRecordWriter(stores.turns, turn, fence);
      await stores.lease.release(fence);
      const later = await stores.lease.acquire(conversationId, turn._id);
      await stores.turns.claim(turn._id, later);
      await expect(writer.modelCall(call(turn._id, 0))).rejects.toThrow(StaleWriterError);
      expect(await stores.turns.listCalls(turn._id)).toEqual([]);
    });
  });

  describe("progress", () => {
    it("records the step the turn is at", async () => {
      const { turn, fence } = await claimed();
      await new TurnRecordWriter(stores.turns, turn, fence).progress({ step: "tool", tool: "big_report", modelCalls: 1 });
      expect((await stores.turns.get(turn._id))?.progress).toMatchObject({ step: "tool", tool: "big_report", modelCalls: 1 });
    });
  });
});
