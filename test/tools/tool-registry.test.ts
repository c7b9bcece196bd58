import { z } from "zod";
import { describe, expect, it } from "vitest";
import { ToolError } from "../../lib/errors.js";
import type { IdempotencyDocument } from "../../lib/store/idempotency-persistence-layer.js";
import type { Caller } from "../../lib/auth/principal.js";
import type { ToolDefinition } from "../../lib/tools/tool.js";
import { ToolIdempotencyGuard } from "../../lib/tools/tool-idempotency-guard.js";
import { ToolRegistry } from "../../lib/tools/tool-registry.js";
import { useTestDatabase } from "../support/store-fixture.js";
import { apiPrincipal } from "../../lib/auth/principal.js";

const analyst: Caller = { principal: apiPrincipal("u-analyst"), roles: ["analyst"] };
const guest: Caller = { principal: apiPrincipal("u-guest"), roles: [] };
const ctx = (caller: Caller) => ({ conversationId: "c1", turnId: "t1", caller });

const echo: ToolDefinition = {
  name: "echo",
  description: "Echo text back",
  schema: z.object({ text: z.string().min(1) }),
  sideEffects: false,
  run: async (input: { text: string }) => `echo: ${input.text}`,
};
const finance: ToolDefinition = {
  name: "finance_only",
  description: "Only analysts",
  schema: z.object({}),
  sideEffects: false,
  allowedRoles: ["analyst", "finance"],
  run: async () => "secret numbers",
};
const failing: ToolDefinition = {
  name: "failing",
  description: "Refuses",
  schema: z.object({ mode: z.enum(["tool", "crash"]) }),
  sideEffects: false,
  run: async (input: { mode: string }) => {
    if (input.mode === "tool") throw new ToolError("the warehouse is closed on Sundays", "failing");
    throw new TypeError("cannot read properties of undefined (password=hunter2)");
  },
};
const slow: ToolDefinition = {
  name: "slow",
  description: "Never finishes in time",
  schema: z.object({}),
  sideEffects: false,
  run: (_input: unknown, c) =>
    new Promise((resolve) => {
      const timer = setTimeout(() => resolve("late"), 5_000);
      c.signal?.addEventListener("abort", () => clearTimeout(timer));
    }),
};

describe("ToolRegistry", () => {
  const registry = new ToolRegistry([echo, finance, failing, slow], { timeoutMs: 100 });

  describe("constructor", () => {
    it("throws when a side-effect tool is given without an idempotency guard", () => {
      expect(() => new ToolRegistry([{ ...echo, sideEffects: true }])).toThrow(/idempotency guard/);
    });

    it("throws on a duplicate tool name", () => {
      expect(() => new ToolRegistry([echo, echo])).toThrow(/duplicate/);
    });
  });

  describe("available", () => {
    it("returns a role-restricted tool to a caller holding one of its roles", () => {
      expect(registry.available(analyst).map((t) => t.name)).toContain("finance_only");
    });

    it("returns the open tools but not a restricted one to a caller without its roles", () => {
      expect(registry.available(guest).map((t) => t.name)).toEqual(["echo", "failing", "slow"]);
    });

    it("returns tools restricted by the roles option (TOOL_ROLES) over their own roles", () => {
      const configured = new ToolRegistry([echo, finance], { roles: { echo: ["analyst"], finance_only: ["nobody"] } });
      expect(configured.available(analyst).map((t) => t.name)).toEqual(["echo"]);
      expect(configured.available(guest)).toEqual([]);
    });
  });

  describe("mayUse", () => {
    it("returns false for a tool that is not registered, so an unknown name opens nothing", () => {
      expect(registry.mayUse("echo", guest)).toBe(true);
      expect(registry.mayUse("finance_only", guest)).toBe(false);
      expect(registry.mayUse("no_such_tool", analyst)).toBe(false);
    });
  });

  describe("toolSpecs", () => {
    it("returns OpenAI-format function specs with a JSON schema from zod", () => {
      const spec = registry.toolSpecs(guest).find((s) => s.function.name === "echo");
      expect(spec).toMatchObject({
        type: "function",
        function: {
          description: "Echo text back",
          parameters: { type: "object", properties: { text: { type: "string", minLength: 1 } }, required: ["text"] },
        },
      });
      expect(spec?.function.parameters).not.toHaveProperty("$schema");
    });

    it("returns no spec for a tool the caller may not use", () => {
      expect(registry.toolSpecs(guest).map((s) => s.function.name)).not.toContain("finance_only");
    });
  });

  describe("execute", () => {
    it("returns the tool's output with status success", async () => {
      await expect(registry.execute({ id: "1", name: "echo", args: { text: "hi" } }, ctx(guest))).resolves.toEqual({
        content: "echo: hi",
        status: "success",
      });
    });

    it("returns a tool error naming the available tools for an unknown tool", async () => {
      const result = await registry.execute({ id: "1", name: "drop_tables", args: {} }, ctx(guest));
      expect(result.status).toBe("error");
      expect(result.content).toMatch(/no tool named "drop_tables".*echo, failing, slow/);
    });

    it("returns an error of bounded length for an unknown tool name of any length, cut to 64 characters", async () => {
      const result = await registry.execute({ id: "1", name: "x".repeat(1_000_000), args: {} }, ctx(guest));
      expect(result.status).toBe("error");
      expect(result.content).toContain(`no tool named "${"x".repeat(64)}…" (1000000 characters)`);
      expect(result.content.length).toBeLessThan(300);
    });

    it("returns a permission error when the caller lacks the tool's roles", async () => {
      const result = await registry.execute({ id: "1", name: "finance_only", args: {} }, ctx(guest));
      expect(result).toEqual({ status: "error", content: expect.stringMatching(/not permitted to use the tool "finance_only"/) });
    });

    it("runs a restricted tool for a caller holding its role", async () => {
      const result = await registry.execute({ id: "1", name: "finance_only", args: {} }, ctx(analyst));
      expect(result).toEqual({ status: "success", content: "secret numbers" });
    });

    it("returns the validation issues when the arguments fail the schema", async () => {
      const result = await registry.execute({ id: "1", name: "echo", args: { text: 42 } }, ctx(guest));
      expect(result.status).toBe("error");
      expect(result.content).toMatch(/invalid arguments for echo: text: /);
    });

    it("returns, with provenance, the roles that allowed a restricted tool's output", async () => {
      const result = await registry.executeWithProvenance({ id: "1", name: "finance_only", args: {} }, ctx(analyst));
      expect(result).toEqual({ status: "success", content: "secret numbers", provenance: [{ tool: "finance_only", roles: ["analyst", "finance"] }] });
    });

    it("returns, with provenance, the tool's name alone for a refusal, which is our own text and no data of the tool's", async () => {
      const result = await registry.executeWithProvenance({ id: "1", name: "finance_only", args: {} }, ctx(guest));
      expect(result.provenance).toEqual([{ tool: "finance_only" }]);
    });

    it("returns, with provenance, the caller as the user of a tool that reads as the user", async () => {
      const own = new ToolRegistry([{ ...echo, readsAsUser: true }]);
      const result = await own.executeWithProvenance({ id: "1", name: "echo", args: { text: "hi" } }, ctx(guest));
      expect(result.provenance).toEqual([{ tool: "echo", user: guest.principal }]);
    });

    it("returns a ToolError's message to the model", async () => {
      const result = await registry.execute({ id: "1", name: "failing", args: { mode: "tool" } }, ctx(guest));
      expect(result).toEqual({ status: "error", content: "Error: failing: the warehouse is closed on Sundays" });
    });

    it("returns only the kind of an unexpected error, not its message", async () => {
      const result = await registry.execute({ id: "1", name: "failing", args: { mode: "crash" } }, ctx(guest));
      expect(result.status).toBe("error");
      expect(result.content).toContain("TypeError");
      expect(result.content).not.toContain("hunter2");
    });

    it("returns a timeout error when the tool runs past the limit", async () => {
      const started = Date.now();
      const result = await registry.execute({ id: "1", name: "slow", args: {} }, ctx(guest));
      expect(result.status).toBe("error");
      expect(result.content).toMatch(/slow timed out after 100 ms/);
      expect(Date.now() - started).toBeLessThan(1_000);
    });
  });

  describe("execute with side effects", () => {
    const t = useTestDatabase("registry", { clearBeforeEach: false });
    let effects = 0;
    const effectful: ToolDefinition = {
      name: "effectful",
      description: "Counts",
      schema: z.object({ n: z.number() }),
      sideEffects: true,
      run: async (input: { n: number }) => {
        effects++;
        await new Promise((r) => setTimeout(r, 30));
        return `effect #${effects} for ${input.n}`;
      },
    };

    function guarded() {
      const guard = new ToolIdempotencyGuard({
        collection: t.db.collection<IdempotencyDocument>("idempotency"),
        pollIntervalMs: 10,
      });
      return new ToolRegistry([effectful], { guard, timeoutMs: 2_000 });
    }

    it("returns the first result without running again when the same call id is retried", async () => {
      effects = 0;
      const first = await guarded().execute({ id: "call-a", name: "effectful", args: { n: 1 } }, ctx(guest));
      const retry = await guarded().execute({ id: "call-a", name: "effectful", args: { n: 1 } }, ctx(guest));
      expect(retry).toEqual(first);
      expect(effects).toBe(1);
    });

    it("runs again for a new call id", async () => {
      effects = 0;
      const registry = guarded();
      await registry.execute({ id: "call-b", name: "effectful", args: { n: 1 } }, ctx(guest));
      await registry.execute({ id: "call-c", name: "effectful", args: { n: 1 } }, ctx(guest));
      expect(effects).toBe(2);
    });

    it("returns a tool error when a call id is reused with different arguments", async () => {
      const registry = guarded();
      await registry.execute({ id: "call-d", name: "effectful", args: { n: 1 } }, ctx(guest));
      const result = await registry.execute({ id: "call-d", name: "effectful", args: { n: 2 } }, ctx(guest));
      expect(result.status).toBe("error");
      expect(result.content).toMatch(/already made with different arguments/);
    });

    it("keys the guard by conversation: the same call id in another conversation runs", async () => {
      effects = 0;
      const registry = guarded();
      await registry.execute({ id: "call-e", name: "effectful", args: { n: 1 } }, ctx(guest));
      await registry.execute({ id: "call-e", name: "effectful", args: { n: 1 } }, { ...ctx(guest), conversationId: "c2" });
      expect(effects).toBe(2);
    });
  });
});
