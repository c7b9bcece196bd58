import { AIMessage, HumanMessage, ToolMessage, type BaseMessage } from "@langchain/core/messages";
import { BSON } from "mongodb";
import { describe, expect, it } from "vitest";
import { TurnArchiveStore } from "../../lib/store/turn-archive-store.js";
import { heldFence, lostFence } from "../support/fences.js";
import { useStoreFixture } from "../support/store-fixture.js";

const { stores } = useStoreFixture("turn_archive_store", (db) => ({
  archive: new TurnArchiveStore(db),
  small: new TurnArchiveStore(db, { partChars: 4_000 }),
}));
const { archive, small } = stores;

function turn(n: number, outputChars = 100): BaseMessage[] {
  return [
    new HumanMessage({ content: `question ${n}`, id: `t${n}:user` }),
    new AIMessage({ content: "", id: `a${n}`, tool_calls: [{ id: `c${n}`, name: "sql_query", args: { q: n }, type: "tool_call" }] }),
    new ToolMessage({ content: "x".repeat(outputChars), tool_call_id: `c${n}`, name: "sql_query", id: `r${n}`, artifact: { handle: `art_${n}` } }),
    new AIMessage({ content: `answer ${n}`, id: `f${n}` }),
  ];
}

/** What a message is, as the thread keeps it. */
const shape = (messages: BaseMessage[]) => messages.map((m) => ({ type: m.getType(), ...m.toDict().data }));

describe("TurnArchiveStore", () => {
  describe("archive", () => {
    it("keeps each turn's messages as the thread held them, ids, tool calls and artifacts included", async () => {
      await archive.archive(
        [
          { turnNumber: 1, messages: turn(1) },
          { turnNumber: 2, messages: turn(2) },
        ],
        heldFence("c1"),
      );
      const read = await archive.read("c1", 1, 2);
      expect(read.map((t) => t.turnNumber)).toEqual([1, 2]);
      expect(shape(read[0].messages)).toEqual(shape(turn(1)));
      expect(shape(read[1].messages)).toEqual(shape(turn(2)));
    });

    it("writes a turn once: archiving it again (a retried step) changes nothing", async () => {
      const fence = heldFence("c2");
      await archive.archive([{ turnNumber: 1, messages: turn(1) }], fence, new Date("2026-12-01T10:00:00Z"));
      await archive.archive(
        [
          { turnNumber: 1, messages: turn(1) },
          { turnNumber: 2, messages: turn(2) },
        ],
        fence,
        new Date("2026-12-01T11:00:00Z"),
      );
      const docs = await archive.collection.find({ conversationId: "c2" }).sort({ turnNumber: 1 }).toArray();
      expect(docs.map((d) => [d.turnNumber, d.archivedAt.toISOString()])).toEqual([
        [1, "2026-12-01T10:00:00.000Z"],
        [2, "2026-12-01T11:00:00.000Z"],
      ]);
    });

    it("splits a turn larger than a part into documents under the part size, read back whole", async () => {
      const big = [...turn(1, 3_000), ...turn(2, 3_000).slice(1)];
      await small.archive([{ turnNumber: 1, messages: big }], heldFence("c3"));
      const docs = await small.collection.find({ conversationId: "c3" }).toArray();
      expect(docs.length).toBeGreaterThan(1);
      for (const doc of docs) expect(BSON.calculateObjectSize(doc)).toBeLessThan(4_000 + 3_500);
      expect(shape((await small.read("c3", 1, 1))[0].messages)).toEqual(shape(big));
    });

    it("leaves nothing when the fence is lost", async () => {
      await expect(archive.archive([{ turnNumber: 1, messages: turn(1) }], lostFence("c4"))).rejects.toMatchObject({ name: "StaleWriterError" });
      expect(await archive.read("c4", 1, 10)).toEqual([]);
    });
  });

  describe("read", () => {
    it("returns only the turns in the range, oldest first", async () => {
      await archive.archive(
        [1, 2, 3, 4].map((n) => ({ turnNumber: n, messages: turn(n) })),
        heldFence("c5"),
      );
      expect((await archive.read("c5", 2, 3)).map((t) => t.turnNumber)).toEqual([2, 3]);
      expect(await archive.read("c5", 3, 2)).toEqual([]);
    });
  });
});
