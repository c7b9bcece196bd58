import { z } from "zod";

/** One problem of edited arguments: where (dotted path) and what. */
export interface ArgumentIssue {
  path: string;
  message: string;
}

type JsonSchema = { [keyword: string]: unknown };

const isSchema = (value: unknown): value is JsonSchema => typeof value === "object" && value !== null && !Array.isArray(value);

/** Keywords whose value is a subschema, a list of them, or a map of them by name. */
const SUBSCHEMA = ["items", "additionalProperties", "not"];
const SUBSCHEMA_LISTS = ["prefixItems", "anyOf", "oneOf", "allOf"];
const SUBSCHEMA_MAPS = ["properties", "$defs", "definitions"];

/**
 * The schema with every object that does not say whether it takes other fields closed to them.
 * A zod object offered to the model says nothing (zod drops unknown keys when the tool parses), so
 * an edit's mistyped field name would pass here and be dropped by the tool: the call would run
 * without what the person typed. A schema that allows other fields says so and keeps them.
 */
function closeObjects(schema: JsonSchema): JsonSchema {
  const out: JsonSchema = { ...schema };
  if (out.type === "object" && isSchema(out.properties) && !("additionalProperties" in out)) out.additionalProperties = false;
  for (const keyword of SUBSCHEMA) if (isSchema(out[keyword])) out[keyword] = closeObjects(out[keyword]);
  for (const keyword of SUBSCHEMA_LISTS) {
    const list = out[keyword];
    if (Array.isArray(list)) out[keyword] = list.map((s) => (isSchema(s) ? closeObjects(s) : s));
  }
  for (const keyword of SUBSCHEMA_MAPS) {
    const map = out[keyword];
    if (isSchema(map)) out[keyword] = Object.fromEntries(Object.entries(map).map(([name, s]) => [name, isSchema(s) ? closeObjects(s) : s]));
  }
  return out;
}

/**
 * The problems of edited arguments against the JSON Schema the approval recorded when it was
 * opened (the one the model was offered), one per path; empty when they are valid. A field the
 * schema does not name is refused unless it says other fields are allowed. The one check of an
 * edit, whichever entry point (API, console, Slack, Teams) it comes from: none of them needs the
 * tools loaded. An approval opened without a schema takes no edit.
 */
export function editedArgumentIssues(schemaText: string | undefined, args: unknown): ArgumentIssue[] {
  if (schemaText === undefined) return [{ path: "(arguments)", message: "this approval was opened before edits were recorded; approve or reject it" }];
  // Compiled on each edit: edits are a person's clicks, few and far between.
  const schema = z.fromJSONSchema(closeObjects(JSON.parse(schemaText) as JsonSchema) as Parameters<typeof z.fromJSONSchema>[0]);
  const parsed = schema.safeParse(args);
  if (parsed.success) return [];
  const issues = new Map<string, string>();
  for (const issue of parsed.error.issues) {
    const path = issue.path.join(".") || "(arguments)";
    // A format with its pattern fails twice on one value: the first message says it.
    if (!issues.has(path)) issues.set(path, issue.message);
  }
  return [...issues].map(([path, message]) => ({ path, message }));
}
