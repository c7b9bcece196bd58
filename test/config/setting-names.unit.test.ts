import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { likelySetting, SETTING_NAMES, settingNameWarnings } from "../../lib/config/setting-names.js";

describe("setting-names", () => {
  describe("settingNameWarnings", () => {
    it("returns the likely setting of a misspelt variable, as the issue's examples spell them", () => {
      expect(settingNameWarnings({ MODEL_PROVDER: "bedrock", TOOL_APPROVAL: "{}", MONGO_URI: "mongodb://x" })).toEqual([
        "MODEL_PROVDER is not a setting; did you mean MODEL_PROVIDER?",
        "MONGO_URI is not a setting; did you mean MONGODB_URI?",
        "TOOL_APPROVAL is not a setting; did you mean TOOL_APPROVALS?",
      ]);
    });

    it("returns a variable with a settings prefix but no close setting, with that prefix's settings", () => {
      const [warning] = settingNameWarnings({ VIEW_SOMETHING_ELSE: "1" });
      expect(warning).toMatch(/^VIEW_SOMETHING_ELSE is not a setting and is ignored \(the VIEW_… settings: VIEW_FINISHED_TURNS, .*VIEW_TOTAL_BUDGET/);
    });

    it("returns nothing for the settings themselves, a shell's usual variables, AWS's, and mongodb-memory-server's", () => {
      const env = Object.fromEntries(SETTING_NAMES.map((name) => [name, "x"]));
      const shell = { PATH: "/bin", HOME: "/root", PWD: "/", SHELL: "bash", TERM: "xterm", LANG: "C", USER: "a", NODE_ENV: "test", CI: "1" };
      const aws = { AWS_PROFILE: "dev", AWS_ACCESS_KEY_ID: "x", AWS_SECRET_ACCESS_KEY: "x", AWS_BEARER_TOKEN_BEDROCK: "x" };
      expect(settingNameWarnings({ ...env, ...shell, ...aws, MONGOMS_VERSION: "7.0.0" })).toEqual([]);
    });

    it("returns the setting for any one-letter slip (a drop, a doubling, a swap of letters) in a long setting name", () => {
      const long = SETTING_NAMES.filter((name) => name.length > 8);
      fc.assert(
        fc.property(fc.constantFrom(...long), fc.nat(), fc.constantFrom("drop", "double", "replace"), (name, at, slip) => {
          const i = at % name.length;
          const typo =
            slip === "drop"
              ? name.slice(0, i) + name.slice(i + 1)
              : slip === "double"
                ? name.slice(0, i) + name[i] + name.slice(i)
                : `${name.slice(0, i)}Q${name.slice(i + 1)}`;
          if (SETTING_NAMES.includes(typo)) return;
          const [warning] = settingNameWarnings({ [typo]: "1" });
          expect(warning).toMatch(new RegExp(`^${typo} is not a setting; did you mean [A-Z_]+\\?$`));
          // The slip's own setting, or one just as close (VIEW_TOKEN_MARGIN and VIEW_TOKEN_MARGIN_MIN are three apart).
          expect(warning).toContain(likelySetting(typo) ?? "");
        }),
        { numRuns: 300 },
      );
    });
  });

  describe("likelySetting", () => {
    it("returns nothing for a short name two edits from a setting (PROT is not taken for PORT)", () => {
      expect(likelySetting("PROT", ["PORT"])).toBeUndefined();
      expect(likelySetting("PORTS", ["PORT"])).toBe("PORT");
    });
  });
});
