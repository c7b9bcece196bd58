import { describe, expect, it } from "vitest";
import { nodeVersionProblem } from "../../lib/local/node-version.js";

describe("nodeVersionProblem", () => {
  it("returns an error below Node 20, a warning for 20, past its end of life, and nothing for 22 and later", () => {
    expect(nodeVersionProblem("v18.20.4")).toEqual({ level: "error", message: expect.stringMatching(/needs Node\.js 20 or later; this is v18\.20\.4/) });
    expect(nodeVersionProblem("v20.20.2")?.level).toBe("warning");
    expect(nodeVersionProblem("v22.12.0")).toBeUndefined();
    expect(nodeVersionProblem("v24.1.0")).toBeUndefined();
  });

  it("returns messages that name the version to install, as Lambda runs, and when 20 reached its end of life", () => {
    expect(nodeVersionProblem("16.0.0")?.message).toMatch(/Install Node\.js 22, as Lambda runs\.$/);
    expect(nodeVersionProblem("v20.1.0")?.message).toMatch(/^Node\.js 20 reached its end of life in April 2026/);
  });
});
