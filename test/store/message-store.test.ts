import { describe, expect, it } from "vitest";
import { MessageStore } from "../../lib/store/message-store.js";
import { heldFence, lostFence } from "../support/fences.js";
import { useStoreFixture } from "../support/store-fixture.js";

const { stores } = useStoreFixture("message_store", (db) => ({ messages: new MessageStore(db) }));
const { messages } = stores;
const at = (minute: number) => new Date(Date.UTC(2026, 11, 1, 10, minute));

describe("MessageStore", () => {
  describe("append", () => {
    it("writes one record per turn and role: a retried write keeps the first", async () => {
      const fence = heldFence("c");
      await messages.append({ turnId: "t1", seq: 1, role: "user", content: "hello" }, fence, at(0));
      await messages.append({ turnId: "t1", seq: 1, role: "user", content: "hello again" }, fence, at(1));
      expect(await messages.list("c")).toEqual([{ turnId: "t1", role: "user", content: "hello", createdAt: at(0).toISOString() }]);
    });

    it("leaves nothing when the fence is lost", async () => {
      await expect(messages.append({ turnId: "t1", seq: 1, role: "user", content: "hello" }, lostFence("c"))).rejects.toMatchObject({
        name: "StaleWriterError",
      });
      expect(await messages.list("c")).toEqual([]);
    });
  });

  describe("list", () => {
    it("returns the messages in turn order, question before answer, whenever each was written", async () => {
      const fence = heldFence("c");
      await messages.append({ turnId: "t2", seq: 2, role: "user", content: "second?" }, fence, at(1));
      await messages.append({ turnId: "t1", seq: 1, role: "assistant", content: "first." }, fence, at(5));
      await messages.append({ turnId: "t1", seq: 1, role: "user", content: "first?" }, fence, at(5));
      await messages.append({ turnId: "t2", seq: 2, role: "assistant", content: "second." }, fence, at(2));
      await messages.append({ turnId: "other", seq: 1, role: "user", content: "elsewhere" }, heldFence("d"), at(0));
      expect((await messages.list("c")).map((m) => m.content)).toEqual(["first?", "first.", "second?", "second."]);
    });
  });

  describe("markReplaced", () => {
    it("marks both messages of the replaced turn and no other", async () => {
      const fence = heldFence("c");
      await messages.append({ turnId: "t1", seq: 1, role: "user", content: "q1" }, fence, at(0));
      await messages.append({ turnId: "t1", seq: 1, role: "assistant", content: "a1" }, fence, at(0));
      await messages.append({ turnId: "t2", seq: 2, role: "user", content: "q2" }, fence, at(1));
      await messages.markReplaced("t1", "t3", fence);
      expect((await messages.list("c")).map((m) => [m.content, m.replacedBy])).toEqual([
        ["q1", "t3"],
        ["a1", "t3"],
        ["q2", undefined],
      ]);
    });
  });

  describe("question", () => {
    it("returns the turn's recorded question, and undefined for a turn without one or in another conversation", async () => {
      await messages.append({ turnId: "t1", seq: 1, role: "user", content: "q1" }, heldFence("c"), at(0));
      expect(await messages.question("c", "t1")).toBe("q1");
      expect(await messages.question("c", "t2")).toBeUndefined();
      expect(await messages.question("d", "t1")).toBeUndefined();
    });
  });

  describe("questionsSince", () => {
    it("returns the questions written at or after the instant, in write order, and all of them without one", async () => {
      const fence = heldFence("c");
      await messages.append({ turnId: "t1", seq: 1, role: "user", content: "q1" }, fence, at(0));
      await messages.append({ turnId: "t1", seq: 1, role: "assistant", content: "a1" }, fence, at(1));
      await messages.append({ turnId: "t2", seq: 2, role: "user", content: "q2" }, fence, at(2));
      await messages.append({ turnId: "t3", seq: 3, role: "user", content: "q3" }, fence, at(3));
      expect((await messages.questionsSince("c", at(2))).map((m) => m.content)).toEqual(["q2", "q3"]);
      expect((await messages.questionsSince("c")).map((m) => m.content)).toEqual(["q1", "q2", "q3"]);
    });
  });

  describe("deleteByConversation", () => {
    it("deletes the conversation's messages and keeps the others'", async () => {
      await messages.append({ turnId: "t1", seq: 1, role: "user", content: "q" }, heldFence("c"), at(0));
      await messages.append({ turnId: "t9", seq: 1, role: "user", content: "q" }, heldFence("d"), at(0));
      await messages.deleteByConversation("c");
      expect(await messages.list("c")).toEqual([]);
      expect(await messages.list("d")).toHaveLength(1);
    });
  });
});
