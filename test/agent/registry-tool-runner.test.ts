import { describe, expect, it } from "vitest";
import { z } from "zod";
import { RegistryToolRunner } from "../../lib/agent/registry-tool-runner.js";
import { ApprovalPolicy } from "../../lib/approvals/approval-policy.js";
import { apiPrincipal, type Caller } from "../../lib/auth/principal.js";
import { ToolError } from "../../lib/errors.js";
import { offloadedArtifact } from "../../lib/model-view/tool-output-artifact.js";
import { ArtifactStore } from "../../lib/store/artifact-store.js";
import { COLLECTIONS } from "../../lib/store/collections.js";
import type { IdempotencyDocument } from "../../lib/store/idempotency-persistence-layer.js";
import { ToolIdempotencyGuard } from "../../lib/tools/tool-idempotency-guard.js";
import { offloadToolOutput } from "../../lib/tools/output-offload.js";
import type { ToolCallContext, ToolDefinition } from "../../lib/tools/tool.js";
import { ToolRegistry } from "../../lib/tools/tool-registry.js";
import { heldFence } from "../support/fences.js";
import { useStoreFixture } from "../support/store-fixture.js";

const { stores, database } = useStoreFixture("tool_runner", (db) => ({ artifacts: new ArtifactStore(db) }));

const analyst: Caller = { principal: apiPrincipal("ada"), roles: ["analyst"] };
const guest: Caller = { principal: apiPrincipal("guest"), roles: [] };

const report: ToolDefinition = {
  name: "report",
  description: "Prints a report of n lines",
  schema: z.object({ lines: z.number().int().min(0) }),
  sideEffects: false,
  run: async ({ lines }: { lines: number }) => Array.from({ length: lines }, (_, i) => `line ${i}: revenue rose in the north region`).join("\n"),
};
const refuse: ToolDefinition = {
  name: "refuse",
  description: "Always refuses",
  schema: z.object({}),
  sideEffects: false,
  run: async () => {
    throw new ToolError("the warehouse is closed", "refuse");
  },
};
const file: ToolDefinition = {
  name: "file",
  description: "Files a follow-up",
  schema: z.object({ title: z.string().min(1) }),
  sideEffects: true,
  allowedRoles: ["analyst"],
  run: async ({ title }: { title: string }) => `filed ${title}`,
};

function runner(offload = true): RegistryToolRunner {
  const guard = new ToolIdempotencyGuard({ collection: database.db.collection<IdempotencyDocument>(COLLECTIONS.idempotency) });
  const registry = new ToolRegistry([report, refuse, file], { guard });
  const policy = new ApprovalPolicy({ file: { require: "always", approvers: { roles: ["lead"] } } }, [report, refuse, file]);
  const offloader = offload
    ? (output: string, meta: Parameters<typeof offloadToolOutput>[1]) => offloadToolOutput(output, meta, { artifacts: stores.artifacts, thresholdTokens: 50 })
    : undefined;
  return new RegistryToolRunner(registry, offloader, policy);
}

const ctx = (toolCallId: string, fenced = true): ToolCallContext => ({
  conversationId: "c",
  turnId: "t",
  toolCallId,
  caller: analyst,
  ...(fenced ? { fence: heldFence("c") } : {}),
});

describe("RegistryToolRunner", () => {
  describe("toolSpecs", () => {
    it("returns the tools the caller may use", () => {
      expect(
        runner()
          .toolSpecs(guest)
          .map((s) => s.function.name),
      ).toEqual(["report", "refuse"]);
    });
  });

  describe("approversFor", () => {
    it("returns the policy's approvers for a call the caller may make with valid arguments", () => {
      expect(runner().approversFor({ id: "1", name: "file", args: { title: "x" } }, analyst)).toEqual({ requester: false, roles: ["lead"] });
    });

    it("returns undefined for a call the registry would refuse: a tool refused to the caller, or invalid arguments", () => {
      expect(runner().approversFor({ id: "1", name: "file", args: { title: "x" } }, guest)).toBeUndefined();
      expect(runner().approversFor({ id: "1", name: "file", args: { title: "" } }, analyst)).toBeUndefined();
    });

    it("returns undefined for a tool no policy holds", () => {
      expect(runner().approversFor({ id: "1", name: "report", args: { lines: 1 } }, analyst)).toBeUndefined();
    });
  });

  describe("run", () => {
    it("returns a small output inline in a successful tool message stamped with its token count", async () => {
      const message = await runner().run({ id: "call1", name: "report", args: { lines: 1 } }, ctx("call1"));
      expect(message).toMatchObject({ tool_call_id: "call1", name: "report", status: "success", content: "line 0: revenue rose in the north region" });
      expect(offloadedArtifact(message)).toBeUndefined();
      expect(message.response_metadata.tokenCount).toBeGreaterThan(0);
    });

    it("returns a large output as a preview and the handle of the artifact that holds it whole", async () => {
      const message = await runner().run({ id: "call2", name: "report", args: { lines: 40 } }, ctx("call2"));
      const artifact = offloadedArtifact(message);
      expect(artifact?.handle).toBeDefined();
      expect(message.content).toBe(artifact?.preview);
      const stored = await stores.artifacts.get(artifact!.handle, { conversationId: "c", reader: analyst.principal });
      expect(stored?.content.split("\n")).toHaveLength(40);
    });

    it("returns a tool's error as an error message, never offloaded", async () => {
      const message = await runner().run({ id: "call3", name: "refuse", args: {} }, ctx("call3"));
      expect(message).toMatchObject({ status: "error" });
      expect(String(message.content)).toContain("the warehouse is closed");
      expect(offloadedArtifact(message)).toBeUndefined();
    });

    it("throws TypeError for a successful call outside a turn's fence when outputs are offloaded, and runs it without offloading", async () => {
      await expect(runner().run({ id: "call4", name: "report", args: { lines: 1 } }, ctx("call4", false))).rejects.toBeInstanceOf(TypeError);
      const message = await runner(false).run({ id: "call5", name: "report", args: { lines: 40 } }, ctx("call5", false));
      expect(offloadedArtifact(message)).toBeUndefined();
    });
  });
});
