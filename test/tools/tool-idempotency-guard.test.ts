import { z } from "zod";
import { describe, expect, it } from "vitest";
import { ToolError } from "../../lib/errors.js";
import type { IdempotencyDocument } from "../../lib/store/idempotency-persistence-layer.js";
import type { ToolContext, ToolDefinition } from "../../lib/tools/tool.js";
import { DEFAULT_TOOL_IDEMPOTENCY_KEY_PREFIX, ToolIdempotencyGuard } from "../../lib/tools/tool-idempotency-guard.js";
import { useTestDatabase } from "../support/store-fixture.js";
import { apiPrincipal } from "../../lib/auth/principal.js";

describe("ToolIdempotencyGuard", () => {
  const t = useTestDatabase("guard", { clearBeforeEach: false });
  let runs = 0;
  const slowEffect: ToolDefinition = {
    name: "slow_effect",
    description: "",
    schema: z.object({ v: z.number() }),
    sideEffects: true,
    run: async (input: { v: number }) => {
      runs++;
      await new Promise((r) => setTimeout(r, 120));
      return `done ${input.v} (run ${runs})`;
    },
  };
  const failing: ToolDefinition = { ...slowEffect, name: "failing", run: async () => (runs++, Promise.reject(new ToolError("nope", "failing"))) };
  const ctx = (toolCallId: string): ToolContext => ({
    conversationId: "conv",
    turnId: "turn",
    toolCallId,
    caller: { principal: apiPrincipal("u"), roles: [] },
    mayUse: () => true,
  });

  const guard = (keyPrefix?: string) =>
    new ToolIdempotencyGuard({ collection: t.db.collection<IdempotencyDocument>("idempotency"), pollIntervalMs: 10, keyPrefix });

  describe("keyOf", () => {
    it("returns conversationId:toolCallId", () => {
      expect(ToolIdempotencyGuard.keyOf({ conversationId: "c-1", toolCallId: "tooluse_9" })).toBe("c-1:tooluse_9");
    });
  });

  describe("run", () => {
    it("stores a completed record under the explicit key prefix", async () => {
      await guard().run(slowEffect, { v: 1 }, ctx("a"));
      const docs = await t.db.collection<IdempotencyDocument>("idempotency").find({}).toArray();
      expect(docs.some((d) => d._id.startsWith(`${DEFAULT_TOOL_IDEMPOTENCY_KEY_PREFIX}#`) && d.status === "COMPLETED")).toBe(true);
    });

    it("returns the twin's result to a call that found it in progress, running the tool once", async () => {
      let release: () => void = () => undefined;
      const gate = new Promise<void>((r) => (release = r));
      let entered: () => void = () => undefined;
      const running = new Promise<void>((r) => (entered = r));
      let gatedRuns = 0;
      const gated: ToolDefinition = {
        ...slowEffect,
        name: "gated_effect",
        run: async (input: { v: number }) => {
          gatedRuns++;
          entered();
          await gate;
          return `done ${input.v} (run ${gatedRuns})`;
        },
      };
      const first = guard().run(gated, { v: 2 }, ctx("b"));
      await running;
      // Started while the first is held inside the tool, so the twin meets its in-progress record.
      const twin = guard().run(gated, { v: 2 }, ctx("b"));
      release();
      expect(await first).toBe("done 2 (run 1)");
      expect(await twin).toBe("done 2 (run 1)");
      expect(gatedRuns).toBe(1);
    });

    it("runs again for the same call id under another key prefix", async () => {
      runs = 0;
      await guard("one").run(slowEffect, { v: 3 }, ctx("c"));
      await guard("two").run(slowEffect, { v: 3 }, ctx("c"));
      expect(runs).toBe(2);
    });

    it("throws the tool's error and lets a retry run the tool again", async () => {
      runs = 0;
      await expect(guard().run(failing, { v: 4 }, ctx("d"))).rejects.toBeInstanceOf(ToolError);
      await expect(guard().run(failing, { v: 4 }, ctx("d"))).rejects.toBeInstanceOf(ToolError);
      expect(runs).toBe(2);
    });

    it("throws a ToolError when the call id is reused with other arguments", async () => {
      await guard().run(slowEffect, { v: 5 }, ctx("e"));
      await expect(guard().run(slowEffect, { v: 6 }, ctx("e"))).rejects.toThrow(/already made with different arguments/);
    });
  });
});
