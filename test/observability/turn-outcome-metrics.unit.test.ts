import { isDeployServerError, NOT_DEPLOY_FAILURE_REASONS, TURN_FAILURE_REASONS } from "../../lib/observability/index.js";

describe("turn outcome metrics", () => {
  describe("isDeployServerError", () => {
    it("returns true for 500 and 502, which a new version can cause", () => {
      expect([500, 502, 504].map(isDeployServerError)).toEqual([true, true, true]);
    });

    it("returns false for the 503s the product answers on purpose, and for anything below 500", () => {
      expect([503, 429, 404, 200].map(isDeployServerError)).toEqual([false, false, false, false]);
    });
  });

  describe("NOT_DEPLOY_FAILURE_REASONS", () => {
    it("holds a busy model and the caller's refusals, and only reasons the turns are counted by", () => {
      expect([...NOT_DEPLOY_FAILURE_REASONS].sort()).toEqual(["conflict", "invalid", "throttled"]);
      for (const reason of NOT_DEPLOY_FAILURE_REASONS) expect(TURN_FAILURE_REASONS).toContain(reason);
    });
  });
});
