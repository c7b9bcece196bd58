import { describe, expect, it } from "vitest";
import { apiPrincipal } from "../../lib/auth/principal.js";
import { ApprovalConflictError, ApprovalExpiredError, ApprovalSupersededError, NotFoundError } from "../../lib/errors.js";
import { type ApprovalDocument, ApprovalStore, approvalIdOf, argsHash } from "../../lib/store/approval-store.js";
import { heldFence } from "../support/fences.js";
import { useStoreFixture } from "../support/store-fixture.js";

const { stores } = useStoreFixture("approval_store", (db) => ({ approvals: new ApprovalStore(db) }));
const { approvals } = stores;

const T0 = new Date("2026-12-01T10:00:00Z");
const minutes = (n: number) => new Date(T0.getTime() + n * 60_000);
const ada = apiPrincipal("ada");
const bob = apiPrincipal("bob");

function approval(toolCallId: string, fields: Partial<ApprovalDocument> = {}): ApprovalDocument {
  const conversationId = fields.conversationId ?? "c";
  const turnId = fields.turnId ?? "t1";
  const args = { title: "x" };
  return {
    _id: approvalIdOf(conversationId, turnId, toolCallId),
    conversationId,
    turnId,
    toolCallId,
    tool: "create_follow_up",
    args,
    argsHash: argsHash(args),
    requester: ada,
    approvers: { requester: true, roles: [] },
    createdAt: T0,
    deadline: minutes(10),
    status: "pending",
    ...fields,
  };
}

async function opened(...docs: ApprovalDocument[]): Promise<ApprovalDocument[]> {
  await approvals.open(docs, heldFence(docs[0].conversationId));
  return docs;
}

describe("argsHash", () => {
  it("returns the same hash whatever the order of keys, at any depth", () => {
    expect(argsHash({ a: 1, b: { c: [1, { d: 2, e: 3 }] } })).toBe(argsHash({ b: { c: [1, { e: 3, d: 2 }] }, a: 1 }));
  });

  it("returns different hashes for different values, array orders or an undefined against null", () => {
    expect(argsHash({ a: 1 })).not.toBe(argsHash({ a: 2 }));
    expect(argsHash([1, 2])).not.toBe(argsHash([2, 1]));
    expect(argsHash(undefined)).toBe(argsHash(null));
  });
});

describe("approvalIdOf", () => {
  it("returns a version-8 UUID, the same for the same call and different for another call", () => {
    const id = approvalIdOf("c", "t", "call1");
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(approvalIdOf("c", "t", "call1")).toBe(id);
    expect(approvalIdOf("c", "t", "call2")).not.toBe(id);
    expect(approvalIdOf("c", "t2", "call1")).not.toBe(id);
  });
});

describe("ApprovalStore", () => {
  describe("open", () => {
    it("records each call once: a retried turn does not undo a decision already taken", async () => {
      const [first] = await opened(approval("call1"));
      await approvals.decide(first._id, { kind: "approve" }, ada, minutes(1));
      await opened(approval("call1"));
      expect((await approvals.get(first._id))?.status).toBe("approved");
    });
  });

  describe("listByConversation", () => {
    it("returns the conversation's approvals oldest first, of one status when asked, at most the limit", async () => {
      const [a, b, c] = await opened(
        approval("a", { createdAt: minutes(2) }),
        approval("b", { createdAt: minutes(1) }),
        approval("c", { createdAt: minutes(3) }),
      );
      await opened(approval("x", { conversationId: "other" }));
      await approvals.decide(c._id, { kind: "reject" }, ada, minutes(4));
      expect((await approvals.listByConversation("c", { limit: 10 })).map((d) => d._id)).toEqual([b._id, a._id, c._id]);
      expect((await approvals.listByConversation("c", { status: "pending", limit: 10 })).map((d) => d._id)).toEqual([b._id, a._id]);
      expect(await approvals.listByConversation("c", { limit: 1 })).toHaveLength(1);
    });

    it("returns the latest approvals, oldest first, when the conversation has more than the limit", async () => {
      const [a, , c] = await opened(
        approval("a", { createdAt: minutes(2) }),
        approval("b", { createdAt: minutes(1) }),
        approval("c", { createdAt: minutes(3) }),
      );
      expect((await approvals.listByConversation("c", { limit: 2 })).map((d) => d._id)).toEqual([a._id, c._id]);
    });
  });

  describe("listByTurn", () => {
    it("returns the turn's approvals only", async () => {
      await opened(approval("a"), approval("b", { turnId: "t2" }));
      expect((await approvals.listByTurn("t2")).map((d) => d.toolCallId)).toEqual(["b"]);
    });
  });

  describe("decide", () => {
    it("returns the approval decided with the status of the choice, who and when", async () => {
      const [doc] = await opened(approval("a"));
      const { approval: decided, decided: first } = await approvals.decide(doc._id, { kind: "reject", reason: "no" }, bob, minutes(1));
      expect(first).toBe(true);
      expect(decided).toMatchObject({ status: "rejected", decision: { kind: "reject", reason: "no", by: bob, at: minutes(1) } });
    });

    it("records an edit with the hash of its arguments", async () => {
      const [doc] = await opened(approval("a"));
      const { approval: decided } = await approvals.decide(doc._id, { kind: "edit", args: { title: "y" } }, ada, minutes(1));
      expect(decided).toMatchObject({ status: "edited", decision: { kind: "edit", args: { title: "y" }, argsHash: argsHash({ title: "y" }) } });
    });

    it("returns the approval unchanged and decided false for the same decision again, an edit with the same arguments included", async () => {
      const [a, b] = await opened(approval("a"), approval("b"));
      await approvals.decide(a._id, { kind: "approve" }, ada, minutes(1));
      const again = await approvals.decide(a._id, { kind: "approve" }, bob, minutes(2));
      expect(again.decided).toBe(false);
      expect(again.approval.decision).toMatchObject({ by: ada, at: minutes(1) });
      await approvals.decide(b._id, { kind: "edit", args: { x: 1, y: 2 } }, ada, minutes(1));
      expect((await approvals.decide(b._id, { kind: "edit", args: { y: 2, x: 1 } }, ada, minutes(2))).decided).toBe(false);
    });

    it("throws ApprovalConflictError for another decision, an edit with other arguments included", async () => {
      const [a, b] = await opened(approval("a"), approval("b"));
      await approvals.decide(a._id, { kind: "approve" }, ada, minutes(1));
      await expect(approvals.decide(a._id, { kind: "reject" }, ada, minutes(2))).rejects.toMatchObject({
        name: "ApprovalConflictError",
        status: "approved",
      });
      await approvals.decide(b._id, { kind: "edit", args: { x: 1 } }, ada, minutes(1));
      await expect(approvals.decide(b._id, { kind: "edit", args: { x: 2 } }, ada, minutes(2))).rejects.toBeInstanceOf(ApprovalConflictError);
    });

    it("throws ApprovalExpiredError at or after the deadline and leaves the approval pending", async () => {
      const [doc] = await opened(approval("a"));
      await expect(approvals.decide(doc._id, { kind: "approve" }, ada, minutes(10))).rejects.toBeInstanceOf(ApprovalExpiredError);
      expect((await approvals.get(doc._id))?.status).toBe("pending");
    });

    it("throws ApprovalExpiredError for an expired approval and ApprovalSupersededError for a superseded one", async () => {
      const [a] = await opened(approval("a"));
      const [b] = await opened(approval("b", { turnId: "t0" }));
      await approvals.expireDue({ _id: a._id }, minutes(11));
      await approvals.supersedeOthers("c", "t1");
      await expect(approvals.decide(a._id, { kind: "approve" }, ada, minutes(12))).rejects.toMatchObject({ name: "ApprovalExpiredError", status: "expired" });
      await expect(approvals.decide(b._id, { kind: "approve" }, ada, minutes(1))).rejects.toBeInstanceOf(ApprovalSupersededError);
    });

    it("throws NotFoundError for an unknown approval", async () => {
      await expect(approvals.decide("missing", { kind: "approve" }, ada)).rejects.toBeInstanceOf(NotFoundError);
    });
  });

  describe("overdue", () => {
    it("returns pending approvals past their deadline, most overdue first, at most the limit", async () => {
      const [a, b] = await opened(approval("a", { deadline: minutes(5) }), approval("b", { deadline: minutes(3) }), approval("c", { deadline: minutes(30) }));
      const [d] = await opened(approval("d", { deadline: minutes(1) }));
      await approvals.decide(d._id, { kind: "approve" }, ada, minutes(0));
      // Only the id and turn matter to the caller (the embedded server returns whole documents).
      expect((await approvals.overdue(minutes(10), 10)).map(({ _id, turnId }) => ({ _id, turnId }))).toEqual([
        { _id: b._id, turnId: "t1" },
        { _id: a._id, turnId: "t1" },
      ]);
      expect(await approvals.overdue(minutes(10), 1)).toHaveLength(1);
    });
  });

  describe("expireDue", () => {
    it("returns how many pending approvals past their deadline it expired, among the filter's, with an expiry decision", async () => {
      const [a] = await opened(approval("a", { deadline: minutes(5) }), approval("b", { deadline: minutes(30) }));
      await opened(approval("x", { turnId: "t2", deadline: minutes(5) }));
      expect(await approvals.expireDue({ turnId: "t1" }, minutes(10))).toBe(1);
      expect(await approvals.get(a._id)).toMatchObject({ status: "expired", decision: { kind: "expire", at: minutes(10) } });
      expect(await approvals.expireDue({ turnId: "t1" }, minutes(10))).toBe(0);
    });
  });

  describe("supersedeOthers", () => {
    it("returns how many pending approvals of the conversation's other turns it superseded, leaving decided ones", async () => {
      const [a, b] = await opened(approval("a", { turnId: "t0" }), approval("b", { turnId: "t0" }));
      await opened(approval("c", { turnId: "t1" }));
      await opened(approval("d", { conversationId: "other", turnId: "t0" }));
      await approvals.decide(b._id, { kind: "approve" }, ada, minutes(1));
      expect(await approvals.supersedeOthers("c", "t1")).toBe(1);
      expect((await approvals.get(a._id))?.status).toBe("superseded");
      expect((await approvals.get(b._id))?.status).toBe("approved");
    });

    it("supersedes the approved and edited calls of turns that never resumed, keeping their decisions, and leaves rejected ones", async () => {
      const [a, b, c] = await opened(approval("a", { turnId: "t0" }), approval("b", { turnId: "t0" }), approval("c", { turnId: "t0" }));
      const [done] = await opened(approval("d", { turnId: "resumed" }));
      await approvals.decide(a._id, { kind: "approve" }, ada, minutes(1));
      await approvals.decide(b._id, { kind: "edit", args: { title: "y" } }, ada, minutes(1));
      await approvals.decide(c._id, { kind: "reject" }, ada, minutes(1));
      await approvals.decide(done._id, { kind: "approve" }, ada, minutes(1));

      expect(await approvals.supersedeOthers("c", "t1", ["t0"])).toBe(2);
      expect(await approvals.get(a._id)).toMatchObject({ status: "superseded", decision: { kind: "approve", by: ada } });
      expect(await approvals.get(b._id)).toMatchObject({ status: "superseded", decision: { kind: "edit", args: { title: "y" } } });
      expect((await approvals.get(c._id))?.status).toBe("rejected");
      expect((await approvals.get(done._id))?.status).toBe("approved");
    });
  });

  describe("claimNotice", () => {
    it("returns true for the first claim of a turn's waiting calls and false after", async () => {
      await opened(approval("a"), approval("b"));
      expect(await approvals.claimNotice("t1", minutes(1))).toBe(true);
      expect(await approvals.claimNotice("t1", minutes(2))).toBe(false);
      expect(await approvals.claimNotice("t9")).toBe(false);
    });
  });

  describe("deleteByConversation", () => {
    it("deletes the conversation's approvals and keeps the others'", async () => {
      const [a] = await opened(approval("a"));
      const [x] = await opened(approval("x", { conversationId: "other" }));
      await approvals.deleteByConversation("c");
      expect(await approvals.get(a._id)).toBeNull();
      expect(await approvals.get(x._id)).not.toBeNull();
    });
  });
});
