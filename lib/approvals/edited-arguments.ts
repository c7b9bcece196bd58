import { z } from "zod";

/** One problem of edited arguments: where (dotted path) and what. */
export interface ArgumentIssue {
  path: string;
  message: string;
}

/** Compiled schemas by their text: a deployment has a handful of tools, so this stays small. */
const compiled = new Map<string, z.ZodType>();
/** Most compiled schemas kept; past it the oldest is dropped (schemas of tools no longer offered). */
const MAX_COMPILED = 64;

function compile(schemaText: string): z.ZodType {
  let schema = compiled.get(schemaText);
  if (!schema) {
    schema = z.fromJSONSchema(JSON.parse(schemaText) as Parameters<typeof z.fromJSONSchema>[0]);
    if (compiled.size >= MAX_COMPILED) compiled.delete(compiled.keys().next().value as string);
    compiled.set(schemaText, schema);
  }
  return schema;
}

/**
 * The problems of edited arguments against the JSON Schema the approval recorded when it was
 * opened (the one the model was offered), one per path; empty when they are valid. The one
 * check of an edit, whichever entry point (API, console, Slack, Teams) it comes from: none of
 * them needs the tools loaded. An approval opened without a schema takes no edit.
 */
export function editedArgumentIssues(schemaText: string | undefined, args: unknown): ArgumentIssue[] {
  if (schemaText === undefined) return [{ path: "(arguments)", message: "this approval was opened before edits were recorded; approve or reject it" }];
  const parsed = compile(schemaText).safeParse(args);
  if (parsed.success) return [];
  const issues = new Map<string, string>();
  for (const issue of parsed.error.issues) {
    const path = issue.path.join(".") || "(arguments)";
    // A format with its pattern fails twice on one value: the first message says it.
    if (!issues.has(path)) issues.set(path, issue.message);
  }
  return [...issues].map(([path, message]) => ({ path, message }));
}
