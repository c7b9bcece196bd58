import { describe, expect, it } from "vitest";
import { z } from "zod";
import { configTable, envSchemaOf, setting, withDefaults } from "../../lib/config/settings.js";

const SETTINGS = {
  PAGE_SIZE: setting({ schema: z.coerce.number().int().min(1), default: 20, description: "rows per page" }),
  REGION: setting({ schema: z.string().min(1), description: "where" }),
};

describe("settings", () => {
  describe("envSchemaOf", () => {
    it("returns a schema that validates each set variable by its setting and leaves unset ones unset", () => {
      const schema = envSchemaOf(SETTINGS);
      expect(schema.parse({ PAGE_SIZE: "5", OTHER: "ignored" })).toEqual({ PAGE_SIZE: 5 });
      expect(schema.parse({})).toEqual({});
      expect(schema.safeParse({ PAGE_SIZE: "0" }).success).toBe(false);
    });
  });

  describe("envSchemaOf (blank values)", () => {
    it("returns a blank variable as unset, so its default applies rather than an empty string coerced to 0", () => {
      const schema = envSchemaOf(SETTINGS);
      const parsed = schema.parse({ PAGE_SIZE: "", REGION: "  " });
      expect(withDefaults(SETTINGS, parsed)).toEqual({ PAGE_SIZE: 20, REGION: undefined });
    });
  });

  describe("withDefaults", () => {
    it("returns each setting's value: the parsed one, else its default, else undefined", () => {
      expect(withDefaults(SETTINGS, {})).toEqual({ PAGE_SIZE: 20, REGION: undefined });
      expect(withDefaults(SETTINGS, { PAGE_SIZE: 5, REGION: "eu-west-1" })).toEqual({ PAGE_SIZE: 5, REGION: "eu-west-1" });
    });
  });

  describe("configTable", () => {
    it("returns a setting's default as the README shows it: code for text, plain for numbers, unset without one", () => {
      const table = configTable({
        A: setting({ schema: z.string(), default: "x", description: "a" }),
        B: setting({ schema: z.number(), default: 3, description: "b" }),
        C: setting({ schema: z.string(), description: "c" }),
        D: setting({ schema: z.string(), defaultText: "built in", description: "d" }),
      });
      expect(table.split("\n").slice(2)).toEqual(["| `A` | `x` | a |", "| `B` | 3 | b |", "| `C` | unset | c |", "| `D` | built in | d |"]);
    });
  });
});
