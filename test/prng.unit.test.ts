import { describe, expect, it } from "vitest";
import { prng } from "../lib/prng.js";

describe("prng", () => {
  it("returns the same sequence for the same seed, and another for another seed", () => {
    const take = (seed: number) => Array.from({ length: 5 }, prng(seed));
    expect(take(42)).toEqual(take(42));
    expect(take(42)).not.toEqual(take(43));
  });

  it("returns mulberry32's published first value for seed 0", () => {
    // mulberry32(0) starts 0x6d2b79f5 → 0.26642920868471265 (the reference C implementation).
    expect(prng(0)()).toBeCloseTo(0.26642920868471265, 15);
  });

  it("returns numbers in [0, 1) spread over the interval", () => {
    const values = Array.from({ length: 10_000 }, prng(7));
    expect(values.every((v) => v >= 0 && v < 1)).toBe(true);
    const mean = values.reduce((a, b) => a + b, 0) / values.length;
    expect(mean).toBeGreaterThan(0.48);
    expect(mean).toBeLessThan(0.52);
  });
});
