import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";
import { z } from "zod";

/**
 * The MCP client's validator of tools' `outputSchema` (the SDK checks `structuredContent` with it),
 * built on zod's `fromJSONSchema`, which the bundles carry already, instead of the SDK's default
 * Ajv (about 135 KB minified, left out of the Lambda bundles: docs/bundling.md). A schema zod cannot
 * read checks nothing: the output is text for the model either way, and untrusted.
 */
export class ZodJsonSchemaValidator implements jsonSchemaValidator {
  getValidator<T>(schema: JsonSchemaType): JsonSchemaValidator<T> {
    let parser: z.ZodType | undefined;
    try {
      parser = z.fromJSONSchema(schema as Parameters<typeof z.fromJSONSchema>[0]);
    } catch {
      parser = undefined;
    }
    return (input) => {
      if (!parser) return { valid: true, data: input as T, errorMessage: undefined };
      const parsed = parser.safeParse(input);
      if (parsed.success) return { valid: true, data: parsed.data as T, errorMessage: undefined };
      return { valid: false, data: undefined, errorMessage: parsed.error.issues.map((i) => `${i.path.join(".") || "(value)"}: ${i.message}`).join("; ") };
    };
  }
}
