import { describe, expect, it } from "vitest";
import { ByteBoundedMap } from "../lib/byte-bounded-map.js";

const bytesOf = (_key: string, value: string) => value.length;

describe("ByteBoundedMap", () => {
  describe("set", () => {
    it("forgets the least recently used entries once their bytes pass the limit, however few they are", () => {
      const map = new ByteBoundedMap<string, string>(100, bytesOf);
      for (const key of ["a", "b", "c"]) map.set(key, key.repeat(40));
      expect(map.bytes).toBe(80);
      expect([map.get("a"), map.get("b")]).toEqual([undefined, "b".repeat(40)]);
      // "b" was used last: "c" goes first.
      map.set("d", "d".repeat(40));
      expect([map.get("b"), map.get("c"), map.get("d")]).toEqual(["b".repeat(40), undefined, "d".repeat(40)]);
    });

    it("keeps no entry larger than the limit, and counts a replaced entry once", () => {
      const map = new ByteBoundedMap<string, string>(100, bytesOf);
      map.set("a", "x".repeat(30));
      map.set("a", "y".repeat(50));
      expect(map.bytes).toBe(50);
      map.set("huge", "z".repeat(101));
      expect(map.get("huge")).toBeUndefined();
      expect(map.size).toBe(1);
    });

    it("holds at most the limit over many entries", () => {
      const map = new ByteBoundedMap<number, string>(10_000, (_k, v) => v.length);
      for (let i = 0; i < 5_000; i++) map.set(i, "v".repeat(1 + (i % 300)));
      expect(map.bytes).toBeLessThanOrEqual(10_000);
      expect(map.get(4_999)).toBe("v".repeat(1 + (4_999 % 300)));
    });
  });
});
