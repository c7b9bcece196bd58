import { describe, expect, it } from "vitest";
import { GroupMembershipCache } from "../../lib/channels/group-membership-cache.js";

/** A clock the test moves. */
function clock(start = 0) {
  const c = { t: start, now: () => c.t };
  return c;
}

describe("GroupMembershipCache", () => {
  describe("get", () => {
    it("returns the loaded value again within the ttl without loading, and loads again after it", async () => {
      const time = clock();
      const cache = new GroupMembershipCache<string[]>(1_000, 10, time.now);
      let loads = 0;
      const load = async () => [`group-${++loads}`];
      expect(await cache.get("u1", load)).toEqual(["group-1"]);
      time.t = 999;
      expect(await cache.get("u1", load)).toEqual(["group-1"]);
      time.t = 1_000;
      expect(await cache.get("u1", load)).toEqual(["group-2"]);
    });

    it("shares one lookup between concurrent callers of a key", async () => {
      const cache = new GroupMembershipCache<number>(1_000, 10, clock().now);
      let loads = 0;
      const load = async () => ++loads;
      expect(await Promise.all([cache.get("u1", load), cache.get("u1", load)])).toEqual([1, 1]);
      expect(loads).toBe(1);
    });

    it("forgets a failed lookup at once, so the next call loads again", async () => {
      const cache = new GroupMembershipCache<number>(1_000, 10, clock().now);
      await expect(cache.get("u1", () => Promise.reject(new Error("directory down")))).rejects.toThrow("directory down");
      expect(await cache.get("u1", async () => 7)).toBe(7);
    });

    it("drops the oldest entry past the most entries", async () => {
      const cache = new GroupMembershipCache<string>(1_000, 2, clock().now);
      let loads = 0;
      const load = (key: string) => async () => `${key}-${++loads}`;
      await cache.get("a", load("a"));
      await cache.get("b", load("b"));
      await cache.get("c", load("c"));
      expect(await cache.get("b", load("b"))).toBe("b-2");
      expect(await cache.get("a", load("a"))).toBe("a-4");
    });
    it("drops the oldest entries past the most bytes, however few the entries", async () => {
      const cache = new GroupMembershipCache<string[]>(1_000, 10_000, clock().now, 100_000);
      let loads = 0;
      // A large group's members: about 36 KB each as the cache counts them.
      const load = (key: string) => async () => {
        loads++;
        return Array.from({ length: 1_000 }, (_, i) => `${key}-member-${i}`);
      };
      for (const key of ["a", "b", "c", "d", "e", "f"]) await cache.get(key, load(key));
      expect(cache.heldBytes).toBeLessThanOrEqual(100_000);
      expect(cache.heldBytes).toBeGreaterThan(50_000);
      expect(loads).toBe(6);
      await cache.get("f", load("f"));
      expect(loads).toBe(6);
      await cache.get("a", load("a"));
      expect(loads).toBe(7);
    });
  });
});
