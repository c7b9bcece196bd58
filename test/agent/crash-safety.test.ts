import { randomUUID } from "node:crypto";
import type { BaseMessage } from "@langchain/core/messages";
import { z } from "zod";
import { describe, expect, it } from "vitest";
import { FAULT_POINTS, type FaultInjector } from "../../lib/agent/fault-points.js";
import { crashOnceAt, SimulatedCrash } from "../support/crash.js";
import type { App } from "../../lib/app.js";
import type { Caller } from "../../lib/auth/principal.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { useTestApp } from "../support/app-fixture.js";
import { ManualClock } from "../support/manual-clock.js";
import { apiPrincipal } from "../../lib/auth/principal.js";

const caller: Caller = { principal: apiPrincipal("alice"), roles: [] };
const testApp = useTestApp("crash", { clearBeforeEach: false });
const { client, dbName } = testApp.database;

/** A tool with a side effect the test can count: one document per effect. */
function effectTool(): ToolDefinition {
  return {
    name: "record_effect",
    description: "Records an effect.",
    schema: z.object({ note: z.string() }),
    sideEffects: true,
    run: async ({ note }: { note: string }, ctx) => {
      await client.db(dbName).collection("follow_ups").insertOne({ conversationId: ctx.conversationId, note });
      return `recorded ${note}`;
    },
  };
}

async function appWith(faults?: FaultInjector, clock?: ManualClock): Promise<App> {
  return testApp.appWith({ tools: [effectTool()], faults, clock });
}

describe("TurnRunner", () => {
  describe("run after a crash", () => {
    for (const point of FAULT_POINTS) {
      it(`resumes a turn that died ${point} with one user message, one answer and one effect`, async () => {
        const faults = crashOnceAt(point);
        const app = await appWith(faults);
        const { _id: conversationId } = await app.database.conversations.create(caller.principal);
        const turnId = randomUUID();
        const request = { conversationId, caller, content: 'record_effect {"note": "ship it"}', turnId };

        await expect(app.runner.run(request)).rejects.toThrow(SimulatedCrash);
        expect(faults.fired).toBe(true);
        const result = await app.runner.run(request);

        expect(result.answer).toContain("recorded ship it");
        const record = await app.database.messages.list(conversationId);
        expect(record.map((m) => m.role)).toEqual(["user", "assistant"]);
        expect(record[1].content).toBe(result.answer);
        const effects = await client.db(dbName).collection("follow_ups").countDocuments({ conversationId });
        expect(effects).toBe(1);
        const state = await app.database.checkpointer.getTuple({ configurable: { thread_id: conversationId } });
        const types = (state!.checkpoint.channel_values.messages as BaseMessage[]).map((m) => m.getType());
        expect(types).toEqual(["human", "ai", "tool", "ai"]);
        expect((await app.database.turns.get(turnId))?.status).toBe("completed");
      });
    }
  });

  describe("run while another attempt holds the lease", () => {
    it("throws a conflict until the dead holder's lease expires, then resumes", async () => {
      const clock = new ManualClock();
      const app = await appWith(undefined, clock);
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      await app.database.conversations.collection.updateOne(
        { _id: conversationId },
        { $set: { lease: { holder: "crashed-attempt", expiresAt: new Date(clock.now().getTime() + 400) } } },
      );
      const request = { conversationId, caller, content: "hello", turnId: randomUUID() };
      await expect(app.runner.run(request)).rejects.toMatchObject({ name: "ConflictError", retryAfterSeconds: 1 });
      clock.pause(399);
      await expect(app.runner.run(request)).rejects.toMatchObject({ name: "ConflictError" });
      clock.pause(2);
      await expect(app.runner.run(request)).resolves.toMatchObject({ turnId: request.turnId });
    });
  });
});
