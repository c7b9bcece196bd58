import { randomUUID } from "node:crypto";
import type { BaseMessage } from "@langchain/core/messages";
import { z } from "zod";
import { describe, expect, it } from "vitest";
import type { FaultInjector, FaultPoint } from "../../lib/agent/fault-points.js";
import type { App } from "../../lib/app.js";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import { StaleWriterError, TurnSupersededError } from "../../lib/errors.js";
import { apiTurnJob } from "../../lib/queue/turn-dispatcher.js";
import type { TurnJob } from "../../lib/queue/turn-job.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { useTestApp } from "../support/app-fixture.js";

const caller: Caller = { principal: apiPrincipal("alice"), roles: [] };
const testApp = useTestApp("recovery", { clearBeforeEach: false });
const { client, dbName } = testApp.database;

/**
 * Dies at the point as a killed process does, as far as the turn's records go: the attempt
 * writes nothing more (it takes itself for fenced out) and tells no final event. Its lease is
 * let go, as one that lapsed.
 */
function dieOnceAt(point: FaultPoint): FaultInjector {
  let fired = false;
  return {
    at(p) {
      if (p !== point || fired) return;
      fired = true;
      throw new StaleWriterError(`died at ${point}`, "test");
    },
  };
}

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

async function appWith(faults?: FaultInjector, jobs?: TurnJob[]): Promise<App> {
  return testApp.appWith({
    tools: [effectTool()],
    faults,
    ...(jobs && { turnQueue: { enqueue: async (job: TurnJob) => void jobs.push(job) } }),
  });
}

async function threadOf(app: App, conversationId: string): Promise<BaseMessage[]> {
  const tuple = await app.database.checkpointer.getTuple({ configurable: { thread_id: conversationId } });
  return (tuple?.checkpoint.channel_values.messages as BaseMessage[]) ?? [];
}

describe("TurnRecovery", () => {
  describe("sweep", () => {
    it("records the answer the thread holds for a turn that died before its record, once, and ends its stream with done", async () => {
      const app = await appWith(dieOnceAt("after-answer"));
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      const turnId = randomUUID();
      await expect(app.runner.run({ conversationId, caller, content: "hello there", turnId })).rejects.toThrow(StaleWriterError);
      expect((await app.database.turns.get(turnId))?.status).toBe("running");

      const result = await app.recovery.sweep();
      const again = await app.recovery.sweep();

      expect(result).toMatchObject({ found: 1, completed: 1 });
      expect(again.found).toBe(0);
      const thread = await threadOf(app, conversationId);
      const turn = await app.database.turns.get(turnId);
      expect(turn).toMatchObject({ status: "completed", answer: String(thread[thread.length - 1].content) });
      const record = await app.database.messages.list(conversationId);
      expect(record.map((m) => [m.role, m.content])).toEqual([
        ["user", "hello there"],
        ["assistant", turn?.answer],
      ]);
      const events = await app.database.turnEvents.after(turnId, 0);
      expect(events[events.length - 1]).toMatchObject({ type: "done", answer: turn?.answer });
    });

    it("fails a turn it cannot resume with code interrupted, answering its open tool call from the idempotency record without running it again", async () => {
      const app = await appWith(dieOnceAt("after-tool-effect"));
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      const turnId = randomUUID();
      await expect(app.runner.run({ conversationId, caller, content: 'record_effect {"note": "ship it"}', turnId })).rejects.toThrow(StaleWriterError);

      const result = await app.recovery.sweep();

      expect(result).toMatchObject({ found: 1, failed: 1 });
      expect(await app.database.turns.get(turnId)).toMatchObject({ status: "failed", error: { code: "interrupted" } });
      const thread = await threadOf(app, conversationId);
      expect(thread.map((m) => m.getType())).toEqual(["human", "ai", "tool"]);
      expect(thread[2].content).toBe("recorded ship it");
      expect(await client.db(dbName).collection("follow_ups").countDocuments({ conversationId })).toBe(1);
      const events = await app.database.turnEvents.after(turnId, 0);
      expect(events[events.length - 1]).toMatchObject({ type: "failed", code: "interrupted" });
    });

    it("hands a turn that recorded its job back to the queue, queued, under a job of its own", async () => {
      const jobs: TurnJob[] = [];
      const app = await appWith(dieOnceAt("after-model-call"), jobs);
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      const request = { conversationId, caller, content: "what is a fence", turnId: randomUUID() };
      await expect(app.runner.run({ ...request, origin: apiTurnJob(request) })).rejects.toThrow(StaleWriterError);

      const result = await app.recovery.sweep();

      expect(result).toMatchObject({ found: 1, resumed: 1 });
      expect((await app.database.turns.get(request.turnId))?.status).toBe("queued");
      expect(jobs).toHaveLength(1);
      expect(jobs[0]).toMatchObject({ channel: "api", dedupeId: request.turnId, resume: expect.stringMatching(/^recovery-/) });
      const resumed = await app.runner.run(request);
      expect(resumed.status).toBe("completed");
      expect((await app.database.messages.list(conversationId)).map((m) => m.role)).toEqual(["user", "assistant"]);
    });

    it("leaves alone a running turn whose lease is held", async () => {
      const app = await appWith();
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      const fence = await app.database.lease.acquire(conversationId, "alive");
      const turnId = randomUUID();
      await app.database.turns.claim(turnId, fence);

      expect((await app.recovery.sweep()).found).toBe(0);
      expect((await app.database.turns.get(turnId))?.status).toBe("running");
      await app.database.lease.release(fence);
    });
  });

  describe("finishOthers (a new message)", () => {
    it("records the answer the thread holds for the turn an older attempt left running, instead of failing it", async () => {
      const app = await appWith(dieOnceAt("after-answer"));
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      const first = randomUUID();
      await expect(app.runner.run({ conversationId, caller, content: "first question", turnId: first })).rejects.toThrow(StaleWriterError);

      await app.runner.run({ conversationId, caller, content: "second question", turnId: randomUUID() });

      const thread = await threadOf(app, conversationId);
      expect(await app.database.turns.get(first)).toMatchObject({ status: "completed", answer: String(thread[1].content) });
      const record = await app.database.messages.list(conversationId);
      expect(record.map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
      expect(record[1].content).toBe(String(thread[1].content));
    });
  });
});

describe("TurnRunner", () => {
  describe("run of a replacing turn", () => {
    it("leaves the replaced turn unmarked when the edit is stopped before its branch is in the thread and a new question comes first", async () => {
      const app = await appWith();
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      const original = randomUUID();
      await app.runner.run({ conversationId, caller, content: "first question", turnId: original });
      const edit = { conversationId, caller, content: "first question, edited", turnId: randomUUID(), replaces: original };
      // The sync deadline before the edit's first checkpoint: the worker would resume it.
      await expect(app.runner.run({ ...edit, signal: AbortSignal.abort() })).rejects.toThrow();
      await app.runner.run({ conversationId, caller, content: "another question", turnId: randomUUID() });

      await expect(app.runner.run(edit)).rejects.toThrow(TurnSupersededError);

      expect((await app.database.turns.get(original))?.replacedBy).toBeUndefined();
      const record = await app.database.messages.list(conversationId);
      expect(record.filter((m) => m.turnId === original).map((m) => m.replacedBy ?? null)).toEqual([null, null]);
      const questions = (await threadOf(app, conversationId)).filter((m) => m.getType() === "human").map((m) => m.content);
      expect(questions).toEqual(["first question", "another question"]);
    });
  });
});
