import type { FaultInjector, FaultPoint } from "../../lib/agent/fault-points.js";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { SimulatedCrash } from "../support/crash.js";

/** Crashes once at the armed point, as the process dying there would. */
const faults: FaultInjector & { armed?: FaultPoint } = {
  at(point) {
    if (point === this.armed) {
      this.armed = undefined;
      throw new SimulatedCrash(point);
    }
  },
};

const POLICY = { create_follow_up: { require: "always", approvers: { roles: ["manager"] } } };

let t: TestServer;
let alice: string;
let aliceManager: string;

beforeAll(async () => {
  // Contents stored clear: the raw reads below check what was stored (sealing: test/crypto/contents-at-rest.test.ts).
  t = await startTestServer({ CONTENT_ENCRYPTION: "off", TOOL_APPROVALS: JSON.stringify(POLICY) }, { app: { faults } });
  alice = await t.token("alice");
  aliceManager = await t.token("alice", { roles: ["manager"] });
});

afterAll(async () => {
  await t?.close();
});

const followUps = (conversationId: string) => t.db.collection("follow_ups").countDocuments({ conversationId });

/** A conversation whose turn waits for approval of one `create_follow_up` call. */
async function waitingTurn(title = "Call the supplier") {
  const id = (await t.call("POST", "/v1/conversations", { token: alice })).body.conversationId as string;
  const asked = await t.call("POST", `/v1/conversations/${id}/messages`, { token: alice, json: { content: `create_follow_up {"title": "${title}"}` } });
  expect(asked.status).toBe(202);
  return { id, turnId: asked.body.turnId as string, approvalId: asked.body.approvals[0].approvalId as string, asked };
}

const decide = (id: string, approvalId: string, json: unknown, token = aliceManager) =>
  t.call("POST", `/v1/conversations/${id}/approvals/${approvalId}`, { token, json });

describe("local server: approvals over the HTTP API", () => {
  describe("POST /v1/conversations/{id}/messages", () => {
    it("returns 202 awaiting_approval with the waiting call, and creates no follow-up", async () => {
      const { id, turnId, asked } = await waitingTurn();
      expect(asked.body).toMatchObject({
        status: "awaiting_approval",
        approvals: [{ tool: "create_follow_up", args: { title: "Call the supplier" } }],
        location: `/v1/conversations/${id}/approvals?status=pending`,
      });
      expect(await followUps(id)).toBe(0);
      const turn = await t.call("GET", `/v1/conversations/${id}/turns/${turnId}`, { token: alice });
      expect(turn.body).toMatchObject({ status: "awaiting_approval", progress: { step: "approval", tool: "create_follow_up" } });
    });
  });

  describe("GET /v1/conversations/{id}/approvals", () => {
    it("returns the pending approval with its arguments, requester and approvers", async () => {
      const { id, approvalId } = await waitingTurn();
      const listed = await t.call("GET", `/v1/conversations/${id}/approvals?status=pending`, { token: alice });
      expect(listed.status).toBe(200);
      expect(listed.body.approvals).toEqual([
        expect.objectContaining({
          approvalId,
          tool: "create_follow_up",
          args: { title: "Call the supplier" },
          requester: { issuer: "api", tenant: null, subject: "alice" },
          approvers: { requester: false, roles: ["manager"] },
          status: "pending",
          decision: null,
        }),
      ]);
    });

    it("returns 404 for another user's conversation", async () => {
      const { id } = await waitingTurn();
      const bob = await t.token("bob", { roles: ["manager"] });
      expect((await t.call("GET", `/v1/conversations/${id}/approvals`, { token: bob })).status).toBe(404);
    });
  });

  describe("POST /v1/conversations/{id}/approvals/{approvalId}", () => {
    it("returns 200 for an approval, and the worker completes the turn with one follow-up", async () => {
      const { id, turnId, approvalId } = await waitingTurn();
      const decided = await decide(id, approvalId, { decision: "approve" });
      expect(decided.status).toBe(200);
      expect(decided.body).toMatchObject({
        decided: true,
        resumed: true,
        approval: { status: "approved", decision: { decision: "approve", by: { subject: "alice" } } },
      });
      await t.server.turnQueue.drain();
      const turn = await t.call("GET", `/v1/conversations/${id}/turns/${turnId}`, { token: alice });
      expect(turn.body.status).toBe("completed");
      expect(turn.body.answer).toContain("Recorded follow-up");
      // The record: what was asked, who decided and when.
      expect(turn.body.approvals).toEqual([
        expect.objectContaining({
          approvalId,
          args: { title: "Call the supplier" },
          status: "approved",
          decision: expect.objectContaining({ by: expect.objectContaining({ subject: "alice" }) }),
        }),
      ]);
      expect(await followUps(id)).toBe(1);
    });

    it("returns the same answer for a repeated decision and 409 for a conflicting one", async () => {
      const { id, approvalId } = await waitingTurn();
      await decide(id, approvalId, { decision: "approve" });
      const again = await decide(id, approvalId, { decision: "approve" });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ decided: false, approval: { status: "approved" } });
      const conflicting = await decide(id, approvalId, { decision: "reject", reason: "changed my mind" });
      expect(conflicting.status).toBe(409);
      expect(conflicting.body.error).toMatchObject({ code: "approval_conflict", approvalId, status: "approved" });
      await t.server.turnQueue.drain();
      expect(await followUps(id)).toBe(1);
    });

    it("returns 200 for a rejection, and the answer says why nothing was created", async () => {
      const { id, turnId, approvalId } = await waitingTurn();
      expect((await decide(id, approvalId, { decision: "reject", reason: "the supplier already called" })).status).toBe(200);
      await t.server.turnQueue.drain();
      const turn = await t.call("GET", `/v1/conversations/${id}/turns/${turnId}`, { token: alice });
      expect(turn.body.answer).toContain("the supplier already called");
      expect(await followUps(id)).toBe(0);
    });

    it("runs the edited call, and the turn record shows the edited arguments", async () => {
      const { id, turnId, approvalId } = await waitingTurn();
      expect((await decide(id, approvalId, { decision: "edit", args: { title: "Call the supplier on Monday" } })).status).toBe(200);
      await t.server.turnQueue.drain();
      const followUp = await t.db.collection("follow_ups").findOne({ conversationId: id });
      expect(followUp?.title).toBe("Call the supplier on Monday");
      const turn = await t.call("GET", `/v1/conversations/${id}/turns/${turnId}`, { token: alice });
      const views = turn.body.calls.map((c: { view: { toolCalls?: { args: unknown }[] }[] }) => c.view.flatMap((m) => m.toolCalls ?? []).map((tc) => tc.args));
      expect(views.at(-1)).toEqual([{ title: "Call the supplier on Monday" }]);
    });

    it("returns 400 for edited arguments the tool refuses, and the approval still waits", async () => {
      const { id, approvalId } = await waitingTurn();
      const bad = await decide(id, approvalId, { decision: "edit", args: { title: "x" } });
      expect(bad.status).toBe(400);
      expect(bad.body.error.details[0].path).toBe("args.title");
      expect((await t.call("GET", `/v1/conversations/${id}/approvals?status=pending`, { token: alice })).body.approvals).toHaveLength(1);
    });

    it("returns 400 naming a field the tool does not take (a mistyped name), and the approval still waits", async () => {
      const { id, approvalId } = await waitingTurn();
      const bad = await decide(id, approvalId, { decision: "edit", args: { title: "Call the supplier", ownr: "Dan" } });
      expect(bad.status).toBe(400);
      expect(bad.body.error.details).toEqual([{ path: "args.(arguments)", message: expect.stringContaining('"ownr"') }]);
      expect((await t.call("GET", `/v1/conversations/${id}/approvals?status=pending`, { token: alice })).body.approvals).toHaveLength(1);
    });

    it("returns 403 to the requester without the approver role, and changes nothing", async () => {
      const { id, approvalId } = await waitingTurn();
      const refused = await decide(id, approvalId, { decision: "approve" }, alice);
      expect(refused.status).toBe(403);
      expect(refused.body.error.code).toBe("forbidden");
      expect((await t.call("GET", `/v1/conversations/${id}/approvals?status=pending`, { token: alice })).body.approvals).toHaveLength(1);
    });

    it("returns 410 for an expired approval, and the turn ends telling the model it expired", async () => {
      const { id, turnId, approvalId } = await waitingTurn();
      await t.db.collection("approvals").updateOne({ _id: approvalId as never }, { $set: { deadline: new Date(Date.now() - 1000) } });
      const late = await decide(id, approvalId, { decision: "approve" });
      expect(late.status).toBe(410);
      expect(late.body.error).toMatchObject({ code: "approval_expired", status: "expired" });
      await t.server.turnQueue.drain();
      const turn = await t.call("GET", `/v1/conversations/${id}/turns/${turnId}`, { token: alice });
      expect(turn.body.status).toBe("completed");
      expect(turn.body.answer).toContain("expired");
      expect(await followUps(id)).toBe(0);
    });

    it("returns 409 approval_superseded after a newer question, which the model answers", async () => {
      const { id, turnId, approvalId } = await waitingTurn();
      const newer = await t.call("POST", `/v1/conversations/${id}/messages`, { token: alice, json: { content: "forget it; hello" } });
      expect(newer.status).toBe(200);
      const stale = await decide(id, approvalId, { decision: "approve" });
      expect(stale.status).toBe(409);
      expect(stale.body.error).toMatchObject({ code: "approval_superseded", status: "superseded" });
      expect((await t.call("GET", `/v1/conversations/${id}/turns/${turnId}`, { token: alice })).body.status).toBe("superseded");
      await t.server.turnQueue.drain();
      expect(await followUps(id)).toBe(0);
    });

    it("creates the follow-up once when the process died after the approval and before the effect", async () => {
      const { id, turnId, approvalId } = await waitingTurn();
      faults.armed = "after-decision";
      const crashed = await decide(id, approvalId, { decision: "approve" });
      expect(crashed.status).toBe(500);
      expect(faults.armed).toBeUndefined();
      await t.server.turnQueue.drain();
      expect(await followUps(id)).toBe(0);
      // The client retries its request: the decision stands and the turn resumes.
      const retried = await decide(id, approvalId, { decision: "approve" });
      expect(retried.body).toMatchObject({ decided: false, resumed: true });
      await t.server.turnQueue.drain();
      expect((await t.call("GET", `/v1/conversations/${id}/turns/${turnId}`, { token: alice })).body.status).toBe("completed");
      expect(await followUps(id)).toBe(1);
    });

    it("returns 404 for an unknown approval and 400 for a malformed one", async () => {
      const { id } = await waitingTurn();
      expect((await decide(id, "00000000-0000-4000-8000-000000000000", { decision: "approve" })).status).toBe(404);
      expect((await decide(id, "not-an-id", { decision: "approve" })).status).toBe(400);
      expect((await decide(id, "00000000-0000-4000-8000-000000000000", { decision: "maybe" })).status).toBe(400);
    });
  });
});
