import { randomUUID } from "node:crypto";
import type { BaseMessage } from "@langchain/core/messages";
import { z } from "zod";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { FaultInjector } from "../../lib/agent/fault-points.js";
import { DEFAULT_MAX_MODEL_CALLS } from "../../lib/agent/turn-runner.js";
import type { App } from "../../lib/app.js";
import { silentLogger } from "../../lib/logger.js";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { lastUserText, startConverseEndpoint, type ConverseEndpoint } from "../support/converse-endpoint.js";
import { useTestApp } from "../support/app-fixture.js";

const caller: Caller = { principal: apiPrincipal("alice"), roles: [] };

class SimulatedCrash extends Error {
  override name = "SimulatedCrash";
}

/** Crashes the first model call made, once, as a process dying there would. */
function crashAfterFirstModelCall(): FaultInjector {
  let fired = false;
  return {
    at(point) {
      if (point === "after-model-call" && !fired) {
        fired = true;
        throw new SimulatedCrash(point);
      }
    },
  };
}

const lookup: ToolDefinition = {
  name: "lookup",
  description: "Looks something up.",
  schema: z.object({}),
  sideEffects: false,
  run: async () => "nothing found",
};

let converse: ConverseEndpoint;
const testApp = useTestApp("retries", { clearBeforeEach: false, env: { MODEL_PROVIDER: "bedrock" }, app: { tools: [lookup], logger: silentLogger } });

beforeAll(async () => {
  // A question with "forever" makes the model call `lookup` on every call; others are answered at once.
  converse = await startConverseEndpoint({
    respond: (request) => {
      const question = request.messages.filter((m) => m.role === "user" && m.content.some((b) => "text" in b)).at(-1);
      const text = question ? lastUserText({ ...request, messages: [question] }) : "";
      return text.includes("forever") ? { toolUses: [{ name: "lookup", input: {} }] } : { text: `answer to: ${text}` };
    },
  });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
});

afterAll(async () => {
  await converse?.close();
  vi.unstubAllEnvs();
});

async function appWith(faults?: FaultInjector): Promise<App> {
  return testApp.appWith({ faults });
}

const questionsTo = (conversationId: string) => converse.requests.filter((r) => JSON.stringify(r.body).includes(conversationId)).length;

describe("TurnRunner", () => {
  describe("run of a retried turn", () => {
    it("throws TurnSupersededError, keeps its question and takes no later answer when later turns completed meanwhile", async () => {
      const t1 = randomUUID();
      const app = await appWith(crashAfterFirstModelCall());
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      const ask = (turnId: string, content: string) => app.runner.run({ conversationId, caller, content, turnId });

      await expect(ask(t1, "first question")).rejects.toThrow(SimulatedCrash);
      const t2 = randomUUID();
      const t3 = randomUUID();
      await expect(ask(t2, "second question")).resolves.toMatchObject({ answer: "answer to: second question" });
      await expect(ask(t3, "third question")).resolves.toMatchObject({ answer: "answer to: third question" });
      const modelCalls = converse.requests.length;

      await expect(ask(t1, "first question")).rejects.toMatchObject({ name: "TurnSupersededError" });

      expect(converse.requests.length).toBe(modelCalls);
      const turn = await app.database.turns.get(t1);
      expect(turn).toMatchObject({ status: "superseded" });
      expect(turn?.answer).toBeUndefined();
      const record = await app.database.messages.list(conversationId);
      expect(record.map((m) => `${m.turnId}:${m.role}`)).toEqual([`${t1}:user`, `${t2}:user`, `${t2}:assistant`, `${t3}:user`, `${t3}:assistant`]);
      expect(record[0].content).toBe("first question");
      const state = await app.database.checkpointer.getTuple({ configurable: { thread_id: conversationId } });
      const messages = state?.checkpoint.channel_values.messages as BaseMessage[];
      expect(messages.at(-1)?.content).toBe("answer to: third question");
      expect(messages.filter((m) => m.getType() === "ai")).toHaveLength(2);
    });

    it("resumes a failed turn that is still the conversation's latest", async () => {
      const t1 = randomUUID();
      const app = await appWith(crashAfterFirstModelCall());
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      const request = { conversationId, caller, content: "only question", turnId: t1 };
      await expect(app.runner.run(request)).rejects.toThrow(SimulatedCrash);
      await expect(app.runner.run(request)).resolves.toMatchObject({ answer: "answer to: only question" });
      const record = await app.database.messages.list(conversationId);
      expect(record.map((m) => `${m.turnId}:${m.role}`)).toEqual([`${t1}:user`, `${t1}:assistant`]);
    });
  });

  describe("run of a turn that needs too many model calls", () => {
    it("throws ModelCallLimitError after the cap, fails the turn with model_call_limit, and a retry makes no further call", async () => {
      const app = await appWith();
      const { _id: conversationId } = await app.database.conversations.create(caller.principal);
      const request = { conversationId, caller, content: `loop forever ${conversationId}`, turnId: randomUUID() };

      await expect(app.runner.run(request)).rejects.toMatchObject({ name: "ModelCallLimitError" });
      expect(questionsTo(conversationId)).toBe(DEFAULT_MAX_MODEL_CALLS);
      await expect(app.runner.run(request)).rejects.toMatchObject({ name: "ModelCallLimitError" });
      await expect(app.runner.run(request)).rejects.toMatchObject({ name: "ModelCallLimitError" });

      expect(questionsTo(conversationId)).toBe(DEFAULT_MAX_MODEL_CALLS);
      expect(await app.database.turns.get(request.turnId)).toMatchObject({ status: "failed", error: { code: "model_call_limit" } });
    });
  });
});
