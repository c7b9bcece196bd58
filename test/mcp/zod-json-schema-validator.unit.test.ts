import { describe, expect, it } from "vitest";
import { ZodJsonSchemaValidator } from "../../lib/mcp/zod-json-schema-validator.js";

describe("ZodJsonSchemaValidator", () => {
  describe("getValidator", () => {
    const validate = new ZodJsonSchemaValidator().getValidator<{ n: number }>({ type: "object", properties: { n: { type: "number" } }, required: ["n"] });

    it("returns valid with the data for a value the schema accepts", () => {
      expect(validate({ n: 1 })).toEqual({ valid: true, data: { n: 1 }, errorMessage: undefined });
    });

    it("returns invalid with the path of the problem for a value it refuses", () => {
      const result = validate({ n: "one" });
      expect(result.valid).toBe(false);
      expect(result.errorMessage).toMatch(/^n: /);
    });
  });
});
