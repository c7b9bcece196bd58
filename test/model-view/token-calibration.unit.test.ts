import { describe, expect, it } from "vitest";
import { DEFAULT_INITIAL_TOKEN_MARGIN, estimateError, TokenCalibration } from "../../lib/model-view/index.js";

const MODEL = "us.anthropic.claude-sonnet-4-20250514-v1:0";

describe("TokenCalibration", () => {
  describe("estimate", () => {
    it("returns ratio 1 and the initial margin for a model not seen yet", () => {
      expect(new TokenCalibration().estimate(MODEL)).toEqual({ ratio: 1, offset: 0, margin: DEFAULT_INITIAL_TOKEN_MARGIN });
    });

    it("returns the model's tokens per local token over the calls seen", () => {
      const calibration = new TokenCalibration();
      calibration.observe(MODEL, 1_000, 1_200);
      calibration.observe(MODEL, 3_000, 3_600);
      expect(calibration.estimate(MODEL).ratio).toBeCloseTo(1.2, 10);
    });

    it("returns a ratio and a fixed offset once three calls of varied sizes fit a line", () => {
      const calibration = new TokenCalibration();
      // 1.1 model tokens a local token, plus 346 on every request (a tool-use system prompt).
      for (const local of [800, 2_000]) calibration.observe(MODEL, local, Math.round(local * 1.1 + 346));
      expect(calibration.estimate(MODEL).offset).toBe(0);
      calibration.observe(MODEL, 5_000, 5_000 * 1.1 + 346);
      const { ratio, offset } = calibration.estimate(MODEL);
      expect(ratio).toBeCloseTo(1.1, 3);
      expect(offset).toBeCloseTo(346, 0);
    });

    it("returns a ratio alone while the calls are all of about the same size", () => {
      const calibration = new TokenCalibration();
      for (const local of [1_000, 1_020, 990, 1_010]) calibration.observe(MODEL, local, local * 1.2);
      expect(calibration.estimate(MODEL)).toMatchObject({ ratio: 1.2, offset: 0 });
    });

    it("returns a margin that shrinks as calls agree, down to the floor", () => {
      const calibration = new TokenCalibration({ initialMargin: 0.5, minMargin: 0.02 });
      const margins: number[] = [];
      for (let i = 0; i < 8; i++) {
        calibration.observe(MODEL, 1_000 + i * 100, Math.round((1_000 + i * 100) * 0.93));
        margins.push(calibration.estimate(MODEL).margin);
      }
      expect(margins[0]).toBe(0.5);
      for (let i = 1; i < margins.length; i++) expect(margins[i]).toBeLessThan(margins[i - 1] + 1e-12);
      expect(margins[1]).toBeCloseTo(0.125, 2);
      expect(margins[7]).toBeCloseTo(0.02, 2);
    });

    it("returns a margin of at least twice the largest relative error the estimate makes on one call", () => {
      const calibration = new TokenCalibration({ initialMargin: 0.5, minMargin: 0.02 });
      for (const modelTokens of [900, 1_100, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000, 1_000]) calibration.observe(MODEL, 1_000, modelTokens);
      const { ratio, margin } = calibration.estimate(MODEL);
      expect(ratio).toBe(1);
      // The 900-token call is 100 tokens, 11.1 %, under the estimate.
      expect(margin).toBeGreaterThanOrEqual((2 * 100) / 900);
      expect(margin).toBeLessThan((2 * 100) / 900 + 0.01);
    });

    it("returns an estimate that follows the latest calls within its window", () => {
      const calibration = new TokenCalibration({ window: 3 });
      for (let i = 0; i < 3; i++) calibration.observe(MODEL, 1_000, 1_000);
      for (let i = 0; i < 3; i++) calibration.observe(MODEL, 1_000, 1_300);
      expect(calibration.estimate(MODEL).ratio).toBeCloseTo(1.3, 10);
      expect(calibration.seen(MODEL)).toBe(3);
    });

    it("returns each model's own estimate", () => {
      const calibration = new TokenCalibration();
      calibration.observe(MODEL, 1_000, 1_300);
      expect(calibration.estimate("local")).toEqual({ ratio: 1, offset: 0, margin: DEFAULT_INITIAL_TOKEN_MARGIN });
    });
  });

  describe("observe", () => {
    it("ignores a call that reported no tokens", () => {
      const calibration = new TokenCalibration();
      calibration.observe(MODEL, 1_000, 0);
      expect(calibration.seen(MODEL)).toBe(0);
    });
  });

  describe("estimateError", () => {
    it("returns the estimate's error relative to the reported count", () => {
      expect(estimateError(1_050, 1_000)).toBeCloseTo(0.05, 10);
      expect(estimateError(950, 1_000)).toBeCloseTo(-0.05, 10);
    });
  });
});
