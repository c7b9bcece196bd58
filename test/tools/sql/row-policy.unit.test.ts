import { describe, expect, it } from "vitest";
import { apiPrincipal } from "../../../lib/auth/principal.js";
import { regionsOf } from "../../../lib/tools/sql/row-policy.js";

const caller = (roles: string[]) => ({ principal: apiPrincipal("u"), roles });

describe("regionsOf", () => {
  const policy = { "*": ["North"], "west-sales": ["West"], emea: ["East", "North"], analyst: "*" } as const;

  it("returns the union of the every-caller entry and the caller's roles' entries, sorted", () => {
    expect(regionsOf(caller(["west-sales", "emea"]), policy)).toEqual(["East", "North", "West"]);
  });

  it("returns * when one of the caller's roles reads every region", () => {
    expect(regionsOf(caller(["west-sales", "analyst"]), policy)).toBe("*");
  });

  it("returns no region for a caller whose roles the policy does not name, without an every-caller entry", () => {
    expect(regionsOf(caller(["constructor"]), { "west-sales": ["West"] })).toEqual([]);
  });
});
