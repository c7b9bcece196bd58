import { describe, expect, it } from "vitest";
import { DEFAULT_PROMPT_CACHE_TTL, DEFAULT_VIEW_FINISHED_TURNS, DEFAULT_VIEW_TOTAL_BUDGET, loadViewConfig } from "../../lib/config/view-config.js";
import { ValidationError } from "../../lib/errors.js";

describe("view config", () => {
  describe("loadViewConfig", () => {
    it("returns the defaults when nothing is set", () => {
      const view = loadViewConfig({});
      expect(view).toMatchObject({ finishedTurns: DEFAULT_VIEW_FINISHED_TURNS, totalBudget: DEFAULT_VIEW_TOTAL_BUDGET });
      expect(view.promptCache).toMatchObject({ enabled: true, stableTtl: DEFAULT_PROMPT_CACHE_TTL, turnTtl: DEFAULT_PROMPT_CACHE_TTL });
    });

    it("returns 0 finished turns when asked, and the cache off", () => {
      expect(loadViewConfig({ VIEW_FINISHED_TURNS: "0", PROMPT_CACHE: "off" })).toMatchObject({ finishedTurns: 0, promptCache: { enabled: false } });
    });

    it("throws ValidationError naming PROMPT_CACHE_TURN_TTL when it is longer than the stable points' TTL", () => {
      expect(() => loadViewConfig({ PROMPT_CACHE_TURN_TTL: "1h" })).toThrow(
        expect.objectContaining({ details: [expect.objectContaining({ path: "PROMPT_CACHE_TURN_TTL" })] }),
      );
      expect(() => loadViewConfig({ VIEW_TOTAL_BUDGET: "-1" })).toThrow(ValidationError);
    });
  });
});
