import type { JsonSchemaType, JsonSchemaValidator, jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";

/**
 * Stands in for the MCP SDK's Ajv validator where its server imports it (ajv, ajv-formats and
 * fast-uri: 134 KB of the api bundle). The server uses it only to check the answers of form
 * elicitations (`elicitInput`), which the product's MCP endpoint never asks (docs/mcp-endpoint.md);
 * tool arguments and structured results are checked with zod. Asked anyway, it says it was left out.
 */
export class AjvJsonSchemaValidator implements jsonSchemaValidator {
  getValidator<T>(_schema: JsonSchemaType): JsonSchemaValidator<T> {
    throw new Error("the MCP server's JSON Schema validator (Ajv) is left out of the Lambda bundles");
  }
}
