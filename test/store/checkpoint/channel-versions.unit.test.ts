import { describe, expect, it } from "vitest";
import { compareVersionKeys, nextChannelVersion, versionOrder } from "../../../lib/store/checkpoint/channel-versions.js";

describe("channel versions", () => {
  describe("nextChannelVersion", () => {
    it("returns a number between 1 and 2 for a channel without a version", () => {
      const version = nextChannelVersion(undefined);
      expect(version).toBeGreaterThan(1);
      expect(version).toBeLessThan(2);
    });

    it("returns the next counter plus a fraction after a numeric, fractional or Postgres-style version", () => {
      expect(Math.floor(nextChannelVersion(7))).toBe(8);
      expect(Math.floor(nextChannelVersion(7.25))).toBe(8);
      expect(Math.floor(nextChannelVersion("7.000000000000000000000000000001.0123"))).toBe(8);
    });

    it("returns a version that is not an integer, so two writers from one version differ", () => {
      const versions = Array.from({ length: 20 }, () => nextChannelVersion(3));
      expect(versions.every((v) => !Number.isInteger(v))).toBe(true);
      expect(new Set(versions).size).toBeGreaterThan(1);
    });

    it("returns the first version for a string that does not start with a number", () => {
      expect(Math.floor(nextChannelVersion("abc"))).toBe(1);
    });

    it("returns a version above its counter even when the counter leaves few bits for the fraction", () => {
      const big = 2 ** 50;
      const version = nextChannelVersion(big);
      expect(version).toBeGreaterThan(big + 1);
      expect(version).toBeLessThan(big + 2);
    });
  });

  describe("versionOrder", () => {
    it("returns the leading number of a version key, a list link or a carried-over value", () => {
      expect(versionOrder("7.25")).toBe(7.25);
      expect(versionOrder("7.25#2")).toBe(7.25);
      expect(versionOrder("7~1ef-checkpoint")).toBe(7);
      expect(versionOrder("1e+21")).toBe(1e21);
    });

    it("returns the key itself when it does not start with a number", () => {
      expect(versionOrder("v-other-saver")).toBe("v-other-saver");
    });
  });

  describe("compareVersionKeys", () => {
    it("returns the order of the leading numbers, not of the strings", () => {
      expect(["10.5", "9.1", "9.1#1"].sort(compareVersionKeys)).toEqual(["9.1", "9.1#1", "10.5"]);
      expect(compareVersionKeys("9.1", "10.5")).toBe(-1);
      expect(compareVersionKeys("10.5", "9.1")).toBe(1);
    });

    it("returns numbers before other strings, and other strings in their own order", () => {
      expect(["b", "3", "a"].sort(compareVersionKeys)).toEqual(["3", "a", "b"]);
    });
  });
});
