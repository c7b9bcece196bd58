import { z } from "zod";

/** One problem of edited arguments: where (dotted path) and what. */
export interface ArgumentIssue {
  path: string;
  message: string;
}

/**
 * The problems of edited arguments against the JSON Schema the approval recorded when it was
 * opened (the one the model was offered), one per path; empty when they are valid. The one
 * check of an edit, whichever entry point (API, console, Slack, Teams) it comes from: none of
 * them needs the tools loaded. An approval opened without a schema takes no edit.
 */
export function editedArgumentIssues(schemaText: string | undefined, args: unknown): ArgumentIssue[] {
  if (schemaText === undefined) return [{ path: "(arguments)", message: "this approval was opened before edits were recorded; approve or reject it" }];
  // Compiled on each edit: edits are a person's clicks, few and far between.
  const schema = z.fromJSONSchema(JSON.parse(schemaText) as Parameters<typeof z.fromJSONSchema>[0]);
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
