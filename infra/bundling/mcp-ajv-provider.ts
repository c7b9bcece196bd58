// Stands in for the MCP SDK's Ajv validator (~135 KB minified with ajv-formats and fast-uri) in the
// Lambda bundles: the SDK's client imports it as its default, but Threadwise's MCP client always
// passes its own (`ZodJsonSchemaValidator`, lib/mcp/zod-json-schema-validator.ts). A use says so.
export class AjvJsonSchemaValidator {
  constructor() {
    throw new Error("the MCP SDK's Ajv validator is left out of the Lambda bundles; pass jsonSchemaValidator");
  }
}
