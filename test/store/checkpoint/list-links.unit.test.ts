import { JsonPlusSerializer } from "@langchain/langgraph-checkpoint";
import { describe, expect, it } from "vitest";
import { CHAIN_KEYS, EMPTY_LIST_DIGEST, planLinks, prefixDigests, serializeItems, type SerializedItem } from "../../../lib/store/checkpoint/list-links.js";

const serde = new JsonPlusSerializer();

/** Items of `size` bytes each, distinct by their first byte. */
function items(count: number, size = 10): SerializedItem[] {
  return Array.from({ length: count }, (_, i) => ({ type: "json", bytes: new Uint8Array(size).fill(i + 1) }));
}

describe("list links", () => {
  describe("serializeItems", () => {
    it("returns each item as the serializer writes it, in order", async () => {
      const serialized = await serializeItems(serde, [{ a: 1 }, "two"]);
      expect(serialized.map((s) => s.type)).toEqual(["json", "json"]);
      expect(await serde.loadsTyped(serialized[1].type, serialized[1].bytes)).toBe("two");
    });
  });

  describe("prefixDigests", () => {
    it("returns one digest per prefix, each depending on every item before it", () => {
      const list = items(3);
      const digests = prefixDigests(list);
      expect(digests).toHaveLength(3);
      expect(new Set(digests).size).toBe(3);
      expect(prefixDigests(list.slice(0, 2))).toEqual(digests.slice(0, 2));
      expect(prefixDigests([list[1], list[0]])[1]).not.toBe(digests[1]);
    });
  });

  describe("planLinks", () => {
    it("returns the whole list in links of at most linkBytes, the last under the version's key", () => {
      const list = items(5);
      const links = planLinks("7.5", list, prefixDigests(list), undefined, 25);
      expect(links.map((l) => [l.key, l.base, l.count, l.items.length])).toEqual([
        ["7.5#0", undefined, 2, 2],
        ["7.5#1", "7.5#0", 4, 2],
        ["7.5", "7.5#1", 5, 1],
      ]);
      expect(links.at(-1)?.digest).toBe(prefixDigests(list)[4]);
    });

    it("returns a link of its own for an item larger than linkBytes", () => {
      const list = [...items(1, 10), ...items(1, 100)];
      expect(planLinks("1", list, prefixDigests(list), undefined, 50).map((l) => l.items.length)).toEqual([1, 1]);
    });

    it("returns only the items after a base the list starts with, built on the base's key", () => {
      const list = items(4);
      const digests = prefixDigests(list);
      const links = planLinks("8.1", list, digests, { key: "7.5", count: 3, digest: digests[2] }, 1000);
      expect(links).toEqual([{ key: "8.1", base: "7.5", count: 4, digest: digests[3], chain: ["7.5"], items: [list[3]] }]);
    });

    it("returns the whole list when the base's digest does not match its prefix, or the base is longer", () => {
      const list = items(3);
      const digests = prefixDigests(list);
      const changed = planLinks("9", list, digests, { key: "8", count: 2, digest: "f".repeat(64) }, 1000);
      expect(changed).toEqual([{ key: "9", base: undefined, count: 3, digest: digests[2], chain: [], items: list }]);
      const longer = planLinks("9", list, digests, { key: "8", count: 4, digest: digests[2] }, 1000);
      expect(longer[0].base).toBeUndefined();
    });

    it("returns one empty link for an unchanged list and for an empty one", () => {
      const list = items(2);
      const digests = prefixDigests(list);
      expect(planLinks("9", list, digests, { key: "8", count: 2, digest: digests[1] }, 1000)).toEqual([
        { key: "9", base: "8", count: 2, digest: digests[1], chain: ["8"], items: [] },
      ]);
      expect(planLinks("1", [], [], undefined, 1000)).toEqual([{ key: "1", base: undefined, count: 0, digest: EMPTY_LIST_DIGEST, chain: [], items: [] }]);
    });

    it("names in each link its nearest ancestors, at most CHAIN_KEYS of them", () => {
      const list = items(3);
      const digests = prefixDigests(list);
      const ancestors = Array.from({ length: CHAIN_KEYS }, (_, i) => `${7 - i / 100}`);
      const links = planLinks("8", list, digests, { key: "7.5", count: 1, digest: digests[0], chain: ancestors }, 10);
      expect(links.map((l) => l.chain)).toEqual([["7.5", ...ancestors].slice(0, CHAIN_KEYS), ["8#0", "7.5", ...ancestors].slice(0, CHAIN_KEYS)]);
    });
  });
});
