import { randomUUID } from "node:crypto";
import { describe, expect, it } from "vitest";
import { HumanMessage } from "@langchain/core/messages";
import { buildModelView } from "../../lib/model-view/build-model-view.js";
import { ConversationStore } from "../../lib/store/conversation-store.js";
import { ConversationLease } from "../../lib/store/lease.js";
import { DEFAULT_LEASE_TTL_MS } from "../../lib/config/database-config.js";
import { TurnStore, type ClaimedTurn } from "../../lib/store/turn-store.js";
import { ZERO_USAGE, type ModelCallRecord } from "../../lib/store/turn-record.js";
import type { WriteFence } from "../../lib/store/write-fence.js";
import { ManualClock } from "../support/manual-clock.js";
import { useStoreFixture } from "../support/store-fixture.js";
import { apiPrincipal, slackPrincipal } from "../../lib/auth/principal.js";
import { ciphertextOf } from "../../lib/crypto/content-cipher.js";
import { ContentRefusedError } from "../../lib/errors.js";

/** Whose question a begun turn is. */
const ASKER = slackPrincipal("T0ASK", "U0ASK");

const owner = apiPrincipal("alice");
const fixture = useStoreFixture("turns", (db) => ({ conversations: new ConversationStore(db), turns: new TurnStore(db) }), {
  clearBeforeEach: false,
});
const { conversations, turns } = fixture.stores;

/** A conversation and a way to take it over, as a later attempt whose predecessor's lease lapsed. */
async function conversation() {
  const clock = new ManualClock();
  const lease = new ConversationLease(conversations.collection, { retentionMs: 86_400_000, clock });
  const { _id } = await conversations.create(owner);
  return {
    id: _id,
    lease,
    async attempt(holder = randomUUID()): Promise<WriteFence> {
      clock.pause(DEFAULT_LEASE_TTL_MS);
      return lease.acquire(_id, holder);
    },
  };
}

async function claimed(turnId: string, fence: WriteFence): Promise<ClaimedTurn> {
  const claim = await turns.claim(turnId, fence);
  if (!claim.claimed) throw new Error("not claimed");
  return claim.turn;
}

const call = (turnId: string, index: number): ModelCallRecord => ({
  turnId,
  index,
  startedAt: new Date(),
  durationMs: 1,
  view: [],
  stats: buildModelView([new HumanMessage("question")], { systemPrompt: "", finishedTurns: 1, toolOutputTokens: 100, totalBudget: 1_000, toolSchemaTokens: 0 })
    .stats,
  usage: ZERO_USAGE,
  toolCalls: [],
});

describe("TurnStore", () => {
  describe("claim", () => {
    it("creates a running turn under the attempt's epoch, with the conversation's expiry", async () => {
      const c = await conversation();
      const fence = await c.attempt();
      const turn = await claimed(randomUUID(), fence);
      expect(turn).toMatchObject({ status: "running", attempt: fence.epoch, conversationId: c.id, expiresAt: fence.expiresAt });
    });

    it("throws StaleWriterError when a later attempt has claimed the turn", async () => {
      const c = await conversation();
      const old = await c.attempt();
      const turnId = randomUUID();
      await claimed(turnId, old);
      await claimed(turnId, await c.attempt());
      await expect(turns.claim(turnId, old)).rejects.toMatchObject({ name: "StaleWriterError" });
    });

    it("returns a completed turn unclaimed, as it is", async () => {
      const c = await conversation();
      const fence = await c.attempt();
      const turn = await claimed(randomUUID(), fence);
      await turns.complete(turn, { answer: "done", usage: ZERO_USAGE, toolCalls: 0, durationMs: 1 }, fence);
      const again = await turns.claim(turn._id, await c.attempt());
      expect(again).toMatchObject({ claimed: false, turn: { status: "completed", answer: "done", attempt: fence.epoch } });
    });
  });

  describe("complete", () => {
    it("throws StaleWriterError and changes nothing when another attempt has claimed the turn since", async () => {
      const c = await conversation();
      const old = await c.attempt();
      const turn = await claimed(randomUUID(), old);
      const fresh = await claimed(turn._id, await c.attempt());
      await expect(turns.complete(turn, { answer: "stale", usage: ZERO_USAGE, toolCalls: 0, durationMs: 1 }, old)).rejects.toMatchObject({
        name: "StaleWriterError",
      });
      expect(await turns.get(turn._id)).toMatchObject({ status: "running", attempt: fresh.attempt });
      expect((await turns.get(turn._id))?.answer).toBeUndefined();
    });
  });

  describe("resumeDecided", () => {
    it("sets the attempt's waiting turn running again, so its writes go through", async () => {
      const c = await conversation();
      const fence = await c.attempt();
      const turn = await claimed(randomUUID(), fence);
      await turns.awaitApproval(turn, ["record_effect"], fence);
      await turns.resumeDecided(turn, fence);
      expect(await turns.get(turn._id)).toMatchObject({ status: "running", attempt: fence.epoch, progress: { step: "model" } });
      await turns.complete(turn, { answer: "done", usage: ZERO_USAGE, toolCalls: 0, durationMs: 1 }, fence);
      expect(await turns.get(turn._id)).toMatchObject({ status: "completed" });
    });

    it("throws StaleWriterError and changes nothing once a later attempt has claimed the waiting turn", async () => {
      const c = await conversation();
      const old = await c.attempt();
      const turn = await claimed(randomUUID(), old);
      await turns.awaitApproval(turn, ["record_effect"], old);
      const later = await c.attempt();
      const fresh = await claimed(turn._id, later);
      await turns.awaitApproval(fresh, ["record_effect"], later);
      await expect(turns.resumeDecided(turn, old)).rejects.toMatchObject({ name: "StaleWriterError" });
      expect(await turns.get(turn._id)).toMatchObject({ status: "awaiting_approval", attempt: later.epoch });
    });

    it("throws StaleWriterError for a turn that is not waiting (a newer question superseded it)", async () => {
      const c = await conversation();
      const fence = await c.attempt();
      const turn = await claimed(randomUUID(), fence);
      await turns.supersede(turn, fence);
      await expect(turns.resumeDecided(turn, fence)).rejects.toMatchObject({ name: "StaleWriterError" });
      expect(await turns.get(turn._id)).toMatchObject({ status: "superseded" });
    });
  });

  describe("recordModelCall", () => {
    it("keeps a later attempt's record of a call when an earlier attempt writes the same index", async () => {
      const c = await conversation();
      const old = await c.attempt();
      const turn = await claimed(randomUUID(), old);
      const fresh = await c.attempt();
      const current = await claimed(turn._id, fresh);
      await turns.recordModelCall(current, { ...call(turn._id, 0), durationMs: 222 }, fresh);
      await expect(turns.recordModelCall(turn, { ...call(turn._id, 0), durationMs: 111 }, old)).rejects.toMatchObject({ name: "StaleWriterError" });
      expect((await turns.listCalls(turn._id)).map((r) => r.durationMs)).toEqual([222]);
    });
  });

  describe("interruptOthers", () => {
    it("fails running turns of earlier attempts only", async () => {
      const c = await conversation();
      const dead = await claimed(randomUUID(), await c.attempt());
      const fence = await c.attempt();
      const current = await claimed(randomUUID(), fence);
      expect(await turns.interruptOthers(current, fence)).toBe(1);
      expect(await turns.get(dead._id)).toMatchObject({ status: "failed", error: { code: "interrupted" } });
      expect(await turns.get(current._id)).toMatchObject({ status: "running" });
    });
  });

  describe("hasLaterTurn", () => {
    it("returns whether a turn of the conversation began after the given sequence number", async () => {
      const c = await conversation();
      const f1 = await c.attempt();
      const seq1 = await turns.begin(await claimed(randomUUID(), f1), f1, ASKER);
      const f2 = await c.attempt();
      const seq2 = await turns.begin(await claimed(randomUUID(), f2), f2, ASKER);
      expect(await turns.hasLaterTurn(c.id, seq1)).toBe(true);
      expect(await turns.hasLaterTurn(c.id, seq2)).toBe(false);
    });
  });

  describe("enqueue", () => {
    it("records a queued turn, and nothing once the conversation is being deleted", async () => {
      const c = await conversation();
      const queued = await turns.enqueue(randomUUID(), c.lease.existing(c.id));
      expect(queued).toMatchObject({ status: "queued", progress: { step: "queued" } });
      await c.lease.revoke(c.id);
      const late = randomUUID();
      await expect(turns.enqueue(late, c.lease.existing(c.id))).rejects.toMatchObject({ name: "StaleWriterError" });
      expect(await turns.get(late)).toBeNull();
    });
  });

  describe("reject", () => {
    it("fails a queued turn that no attempt has claimed, and leaves a claimed one alone", async () => {
      const c = await conversation();
      const waiting = await turns.enqueue(randomUUID(), c.lease.existing(c.id));
      await turns.reject(waiting._id, { code: "payload_too_large", message: "too long" });
      expect(await turns.get(waiting._id)).toMatchObject({ status: "failed", error: { code: "payload_too_large" } });
      const running = await claimed(randomUUID(), await c.attempt());
      await turns.reject(running._id, { code: "payload_too_large", message: "too long" });
      expect(await turns.get(running._id)).toMatchObject({ status: "running" });
    });
  });

  describe("statusOf", () => {
    it("returns the status of a turn whose origin is sealed, which a store without the tenants' keys (the webhooks') refuses to open", async () => {
      const c = await conversation();
      const turn = await claimed(randomUUID(), await c.attempt());
      // Sealed by a function with the keys; this store has none (`CLEAR_FIELDS`), as the webhooks' have none.
      await fixture.database.db.collection("turns").updateOne({ _id: turn._id as never }, { $set: { origin: ciphertextOf(new Uint8Array([1, 2, 3])) } });
      await expect(turns.get(turn._id)).rejects.toThrow(ContentRefusedError);
      expect(await turns.statusOf(turn._id)).toBe("running");
      expect(await turns.statusOf(randomUUID())).toBeUndefined();
    });
  });
});
