import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { PendingCall } from "../../lib/agent/approval-gate.js";
import { ApprovalPause, outcomeOf, waitingCalls } from "../../lib/agent/approval-pause.js";
import { createApp, type App } from "../../lib/app.js";
import { apiPrincipal } from "../../lib/auth/principal.js";
import { loadConfig } from "../../lib/config/config.js";
import type { ApprovalDocument } from "../../lib/store/approval-store.js";
import type { ClaimedTurn } from "../../lib/store/turn-store.js";
import { useTestDatabase } from "../support/store-fixture.js";
import { mongoUri } from "../support/mongo.js";

const alice = apiPrincipal("alice", "acme");
const bob = apiPrincipal("bob", "acme");
const database = useTestDatabase("approval_pause", { clearBeforeEach: false });
let app: App;
beforeAll(async () => {
  app = await createApp(loadConfig({ MONGODB_URI: mongoUri(), MONGODB_DB: database.dbName }), { mongoClient: database.client, tools: [] });
});
afterAll(() => app.close());

/** A turn begun under its attempt's fence, as the runner has it when the graph pauses. */
async function begunTurn() {
  const { _id: conversationId } = await app.database.conversations.create(alice);
  const turnId = randomUUID();
  const fence = await app.database.lease.acquire(conversationId, turnId);
  const claim = await app.database.turns.claim(turnId, fence);
  const turn = claim.turn as ClaimedTurn;
  turn.seq = await app.database.turns.begin(turn, fence, alice);
  return { turn, fence };
}

const call = (tool = "send_mail"): PendingCall => ({
  approvalId: randomUUID(),
  toolCallId: `call-${randomUUID().slice(0, 6)}`,
  tool,
  args: { to: "bob" },
  approvers: { requester: true, roles: [] },
});

describe("ApprovalPause", () => {
  describe("pause", () => {
    it("records a pending approval per call, marks the turn waiting and returns the calls it waits on", async () => {
      const pause = new ApprovalPause(app.database.turns, { store: app.database.approvals, ttlMs: 60_000 });
      const { turn, fence } = await begunTurn();
      const calls = [call(), call("delete_file")];
      const paused = await pause.pause(turn, { requester: alice, origin: { channel: "api" } }, calls, fence);
      expect(paused?.approvals.map((a) => [a.approvalId, a.tool])).toEqual(calls.map((c) => [c.approvalId, c.tool]));
      expect(paused?.usage.inputTokens).toBe(0);
      const stored = await app.database.approvals.listByTurn(turn._id);
      expect(stored.map((a) => [a.status, a.requester.subject, a.origin])).toEqual([
        ["pending", "alice", { channel: "api" }],
        ["pending", "alice", { channel: "api" }],
      ]);
      expect((await app.database.turns.get(turn._id))?.status).toBe("awaiting_approval");
    });

    it("returns undefined when every call was decided before the turn was marked waiting, so the attempt goes on", async () => {
      const pause = new ApprovalPause(app.database.turns, { store: app.database.approvals, ttlMs: 60_000 });
      const { turn, fence } = await begunTurn();
      const waiting = call();
      await app.database.approvals.open(
        [
          {
            _id: waiting.approvalId,
            conversationId: turn.conversationId,
            turnId: turn._id,
            toolCallId: waiting.toolCallId,
            tool: waiting.tool,
            args: waiting.args,
            argsHash: "",
            requester: alice,
            approvers: waiting.approvers,
            createdAt: new Date(),
            deadline: new Date(Date.now() + 60_000),
            status: "pending",
          },
        ],
        fence,
      );
      await app.database.approvals.decide(waiting.approvalId, { kind: "approve" }, bob);
      expect(await pause.pause(turn, { requester: alice }, [waiting], fence)).toBeUndefined();
    });

    it("throws when the runner has no approval store, rather than letting a held call run", async () => {
      const { turn, fence } = await begunTurn();
      await expect(new ApprovalPause(app.database.turns, undefined).pause(turn, { requester: alice }, [call()], fence)).rejects.toThrow(TypeError);
    });
  });

  describe("outcomesOf", () => {
    it("returns undefined while a call still waits, then each call's outcome once all are decided", async () => {
      const pause = new ApprovalPause(app.database.turns, { store: app.database.approvals, ttlMs: 60_000 });
      const { turn, fence } = await begunTurn();
      const calls = [call(), call()];
      await pause.pause(turn, { requester: alice }, calls, fence);
      await app.database.approvals.decide(calls[0].approvalId, { kind: "approve" }, bob);
      expect(await pause.outcomesOf(turn._id, calls)).toBeUndefined();
      await app.database.approvals.decide(calls[1].approvalId, { kind: "reject", reason: "not today" }, bob);
      expect(await pause.outcomesOf(turn._id, calls)).toEqual({
        [calls[0].approvalId]: { kind: "approve", by: "bob" },
        [calls[1].approvalId]: { kind: "reject", by: "bob", reason: "not today" },
      });
    });

    it("expires the approvals past their deadline first", async () => {
      const pause = new ApprovalPause(app.database.turns, { store: app.database.approvals, ttlMs: -1_000 });
      const { turn, fence } = await begunTurn();
      const calls = [call()];
      await pause.pause(turn, { requester: alice }, calls, fence);
      expect((await pause.outcomesOf(turn._id, calls))?.[calls[0].approvalId]).toMatchObject({ kind: "expire" });
    });

    it("returns undefined without an approval store", async () => {
      expect(await new ApprovalPause(app.database.turns, undefined).outcomesOf("t", [call()])).toBeUndefined();
    });
  });
});

describe("outcomeOf", () => {
  const deadline = new Date("2026-01-01T00:00:00Z");
  const at = new Date();
  const cases: [string, ApprovalDocument["decision"], unknown][] = [
    ["an approval", { kind: "approve", by: bob, at }, { kind: "approve", by: "bob" }],
    ["an edit", { kind: "edit", args: { to: "carol" }, by: bob, at }, { kind: "edit", by: "bob", args: { to: "carol" } }],
    ["a rejection with its reason", { kind: "reject", reason: "no", by: bob, at }, { kind: "reject", by: "bob", reason: "no" }],
    ["a rejection without one", { kind: "reject", by: bob, at }, { kind: "reject", by: "bob" }],
    ["an expiry", { kind: "expire", at }, { kind: "expire", deadline: deadline.toISOString() }],
    ["no decision", undefined, { kind: "expire", deadline: deadline.toISOString() }],
  ];
  it.each(cases)("returns how %s resumes its call", (_name, decision, outcome) => {
    expect(outcomeOf({ deadline, decision } as ApprovalDocument)).toEqual(outcome);
  });
});

describe("waitingCalls", () => {
  it("returns every call of every pending interrupt, and none without one", () => {
    const [a, b] = [call(), call()];
    const tasks = [
      { id: "1", name: "tools", interrupts: [{ id: "i", value: { approvals: [a, b] } }] },
      { id: "2", name: "agent", interrupts: [] },
    ];
    expect(waitingCalls({ tasks } as never)).toEqual([a, b]);
    expect(waitingCalls({ tasks: [] })).toEqual([]);
  });
});
