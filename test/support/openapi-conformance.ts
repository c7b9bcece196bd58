import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import { openApiDocument } from "../../lib/api/openapi.js";

type Responses = Record<string, { content?: { "application/json"?: { schema: object } } }>;
const document = openApiDocument() as {
  paths: Record<string, Record<string, { responses: Responses }>>;
  components: { schemas: Record<string, object> };
};
// Formats are described, not enforced here: the date-time pattern beside each does the checking.
const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
ajv.addSchema({ $id: "threadwise:components", $defs: document.components.schemas });
const validators = new Map<object, ValidateFunction>();

const templates = Object.keys(document.paths).map((template) => ({
  template,
  pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, "[^/]+")}$`),
}));

function validatorFor(schema: object): ValidateFunction {
  let validate = validators.get(schema);
  if (!validate) {
    const rewritten = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/schemas/', '"threadwise:components#/$defs/'));
    validate = ajv.compile(rewritten);
    validators.set(schema, validate);
  }
  return validate;
}

/**
 * Checks a response of the local server against the OpenAPI document: its status must be one the
 * operation documents, and its body must match that status's schema. Paths that are not API
 * operations (the console, webhooks, a wrong method) are not checked.
 */
export function assertConformsToOpenApi(method: string, path: string, status: number, body: unknown): void {
  const bare = path.split("?")[0];
  const match = templates.find((t) => t.pattern.test(bare));
  const operation = match && document.paths[match.template][method.toLowerCase()];
  if (!match || !operation) return;
  const response = operation.responses[String(status)];
  if (!response) throw new Error(`${method} ${match.template} answered ${status}, which the OpenAPI document does not list`);
  const schema = response.content?.["application/json"]?.schema;
  if (!schema) {
    if (body !== undefined && body !== "") throw new Error(`${method} ${match.template} ${status} has a body the OpenAPI document does not describe`);
    return;
  }
  const validate = validatorFor(schema);
  if (!validate(body)) {
    throw new Error(`${method} ${match.template} ${status} does not match the OpenAPI document: ${ajv.errorsText(validate.errors)}`);
  }
}

/** A `fetch` that holds every answer to the OpenAPI document (an SDK client's `callerOptions.fetch`). */
export async function conformingFetch(url: string | URL | Request, init?: RequestInit): Promise<Response> {
  const response = await fetch(url, init);
  const path = new URL(String(url)).pathname;
  const type = response.headers.get("content-type") ?? "";
  if (!type.includes("text/event-stream")) {
    const text = await response.clone().text();
    assertConformsToOpenApi(init?.method ?? "GET", path, response.status, text ? JSON.parse(text) : undefined);
  } else assertConformsToOpenApi(init?.method ?? "GET", path, response.status, undefined);
  return response;
}
