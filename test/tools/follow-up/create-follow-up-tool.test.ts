import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { FieldCipher } from "../../../lib/crypto/field-cipher.js";
import { LocalTenantKeys } from "../../../lib/crypto/local-tenant-keys.js";
import type { IdempotencyDocument } from "../../../lib/store/idempotency-persistence-layer.js";
import { createFollowUpTool, type FollowUpDocument } from "../../../lib/tools/follow-up/create-follow-up-tool.js";
import type { Caller } from "../../../lib/auth/principal.js";
import { ToolIdempotencyGuard } from "../../../lib/tools/tool-idempotency-guard.js";
import { ToolRegistry } from "../../../lib/tools/tool-registry.js";
import { heldFence, lostFence } from "../../support/fences.js";
import { useTestDatabase } from "../../support/store-fixture.js";
import { startWebhookEndpoint, type WebhookEndpoint } from "../../support/webhook-endpoint.js";
import { apiPrincipal } from "../../../lib/auth/principal.js";

const caller: Caller = { principal: apiPrincipal("u-1", "acme"), roles: ["analyst"] };
const args = { title: "Review West region discount approvals", owner: "dana@alderpike.example", dueDate: "2026-11-15" };

describe("create_follow_up", () => {
  const t = useTestDatabase("followup", { clearBeforeEach: false });
  let webhook: WebhookEndpoint;

  beforeAll(async () => {
    webhook = await startWebhookEndpoint();
  });
  afterAll(async () => {
    await webhook.close();
  });
  beforeEach(() => {
    webhook.requests.length = 0;
    webhook.setDelayMs(0);
  });

  /** A fresh process: new registry, guard and tool over the same database, as after a crash. */
  function freshRegistry() {
    const tool = createFollowUpTool({
      collection: t.db.collection<FollowUpDocument>("follow_ups"),
      webhookUrl: webhook.url,
    });
    const guard = new ToolIdempotencyGuard({
      collection: t.db.collection<IdempotencyDocument>("idempotency"),
      pollIntervalMs: 20,
    });
    return new ToolRegistry([tool], { guard, timeoutMs: 5_000 });
  }

  const call = (id: string) => ({ id, name: "create_follow_up", args });
  const context = (conversationId: string) => ({ conversationId, turnId: "turn-1", caller });

  describe("run", () => {
    it("records the title, details and owner encrypted when given the database's cipher, readable only through it", async () => {
      const cipher = new FieldCipher({
        keys: new LocalTenantKeys(await mkdtemp(join(tmpdir(), "threadwise-follow-up-keys-"))),
        tenantOf: async () => ({ issuer: "api", tenant: "acme" }),
      });
      const tool = createFollowUpTool({ collection: t.db.collection<FollowUpDocument>("follow_ups"), cipher });
      await tool.run({ ...args, details: "the West region's numbers" }, {
        conversationId: "conv-sealed",
        turnId: "turn-1",
        toolCallId: "tc-s",
        caller,
      } as never);
      const raw = await t.db.collection<FollowUpDocument>("follow_ups").findOne({ _id: "conv-sealed:tc-s" });
      expect(JSON.stringify(raw)).not.toContain("West region");
      expect(raw?.dueDate).toBe(args.dueDate);
      const ref = { collection: "follow_ups", id: "conv-sealed:tc-s", field: "title" };
      expect(await cipher.openText("conv-sealed", ref, raw?.title)).toBe(args.title);
      // Moved to another field: refused.
      await expect(cipher.openText("conv-sealed", { ...ref, field: "owner" }, raw?.title)).rejects.toMatchObject({ reason: "moved" });
    });

    it("records the follow-up and posts it with the call's idempotency key", async () => {
      const result = await freshRegistry().execute(call("tc-1"), context("conv-1"));
      expect(result.status).toBe("success");
      expect(result.content).toMatch(/Created follow-up FU-[0-9A-F]{8}: "Review West region discount approvals"/);
      expect(webhook.requests).toHaveLength(1);
      expect(webhook.requests[0]!.headers["idempotency-key"]).toBe("conv-1:tc-1");
      const principal = { issuer: "api", tenant: "acme", subject: "u-1" };
      expect(JSON.parse(webhook.requests[0]!.body)).toMatchObject({ title: args.title, dueDate: "2026-11-15", createdBy: principal });
      const doc = await t.db.collection<FollowUpDocument>("follow_ups").findOne({ _id: "conv-1:tc-1" });
      expect(doc).toMatchObject({ createdBy: principal, owner: args.owner });
    });

    it("posts exactly once when the same tool call is retried after a crash before the checkpoint", async () => {
      const first = await freshRegistry().execute(call("tc-2"), context("conv-2"));
      // The worker died after the effect and before LangGraph saved the tool message: the retry
      // replays the same tool call id in a new process.
      const replay = await freshRegistry().execute(call("tc-2"), context("conv-2"));
      expect(replay).toEqual(first);
      expect(webhook.requests).toHaveLength(1);
      expect(await t.db.collection("follow_ups").countDocuments({ conversationId: "conv-2" })).toBe(1);
    });

    it("posts exactly once when two invocations of the same call race", async () => {
      webhook.setDelayMs(150);
      const [a, b] = await Promise.all([freshRegistry().execute(call("tc-3"), context("conv-3")), freshRegistry().execute(call("tc-3"), context("conv-3"))]);
      expect(a.status).toBe("success");
      expect(b).toEqual(a);
      expect(webhook.requests).toHaveLength(1);
    });

    it("returns a tool error when the webhook fails, and posts again on the retry", async () => {
      webhook.respondWith(503);
      const registry = freshRegistry();
      const failed = await registry.execute(call("tc-4"), context("conv-4"));
      expect(failed.status).toBe("error");
      expect(failed.content).toMatch(/task webhook answered 503/);
      const retried = await registry.execute(call("tc-4"), context("conv-4"));
      expect(retried.status).toBe("success");
      expect(webhook.requests).toHaveLength(2);
      expect(await t.db.collection("follow_ups").countDocuments({ conversationId: "conv-4" })).toBe(1);
    });

    it("sends the same Idempotency-Key when a call that timed out after posting is retried", async () => {
      // The post reached the webhook, but the answer came too late: the call failed, so the
      // guard released it and the retry posts again. Downstream dedupes on the key; we keep one record.
      // Generous margins: the post must reach the webhook before the limit, even on a loaded machine.
      webhook.setDelayMs(3_000);
      const tool = createFollowUpTool({ collection: t.db.collection<FollowUpDocument>("follow_ups"), webhookUrl: webhook.url });
      const guard = new ToolIdempotencyGuard({ collection: t.db.collection<IdempotencyDocument>("idempotency"), pollIntervalMs: 20 });
      const impatient = new ToolRegistry([tool], { guard, timeoutMs: 1_000 });
      const first = await impatient.execute(call("tc-6"), context("conv-6"));
      expect(first.content).toMatch(/timed out after 1000 ms/);
      expect(webhook.requests).toHaveLength(1);
      webhook.setDelayMs(0);
      const retry = await freshRegistry().execute(call("tc-6"), context("conv-6"));
      expect(retry).toMatchObject({ status: "success" });
      expect(webhook.requests.map((r) => r.headers["idempotency-key"])).toEqual(["conv-6:tc-6", "conv-6:tc-6"]);
      expect(await t.db.collection("follow_ups").countDocuments({ conversationId: "conv-6" })).toBe(1);
    });

    it("records the follow-up with the turn's expiry under a fence that holds", async () => {
      const fence = heldFence("conv-7", 3);
      await freshRegistry().execute(call("tc-7"), { ...context("conv-7"), fence });
      expect(await t.db.collection<FollowUpDocument>("follow_ups").findOne({ _id: "conv-7:tc-7" })).toMatchObject({ attempt: 3, expiresAt: fence.expiresAt });
    });

    it("records nothing and posts nothing when the turn no longer holds its conversation", async () => {
      const result = await freshRegistry().execute(call("tc-8"), { ...context("conv-8"), fence: lostFence("conv-8") });
      expect(result.status).toBe("error");
      expect(webhook.requests).toHaveLength(0);
      expect(await t.db.collection("follow_ups").countDocuments({ conversationId: "conv-8" })).toBe(0);
    });

    it("returns a validation error for a malformed due date", async () => {
      const result = await freshRegistry().execute({ id: "tc-5", name: "create_follow_up", args: { ...args, dueDate: "next Tuesday" } }, context("conv-5"));
      expect(result.status).toBe("error");
      expect(result.content).toMatch(/dueDate/);
      expect(webhook.requests).toHaveLength(0);
    });
  });
});
