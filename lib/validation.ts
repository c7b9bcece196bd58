import type { z } from "zod";
import { PayloadTooLargeError, ValidationError } from "./errors.js";

/** Zod's issues as the error details every 400 and configuration error carries: where, and what. */
export function issueDetails(error: z.ZodError, emptyPath = ""): { path: string; message: string }[] {
  return error.issues.map((i) => ({ path: i.path.join(".") || emptyPath, message: i.message }));
}

/** Parses at a boundary: the value, or a `ValidationError` with `message` and the issues. */
export function parseOrThrow<T>(schema: z.ZodType<T>, value: unknown, message: string, emptyPath = ""): T {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new ValidationError(message, issueDetails(parsed.error, emptyPath));
  return parsed.data;
}

/** A setting that holds JSON (`TOOL_ROLES`, `SLACK_ROLES`, …), parsed; a value that is not JSON is a `ValidationError` naming the setting. */
export function parseJsonSetting(raw: string, name: string): unknown {
  try {
    return JSON.parse(raw);
  } catch (error) {
    throw new ValidationError("invalid configuration", [{ path: name, message: "not JSON" }], { cause: error });
  }
}

/** The refusal of a question over `maxMessageChars` (413), worded the same by every entry that takes one. */
export function questionTooLarge(maxMessageChars: number): PayloadTooLargeError {
  return new PayloadTooLargeError(`the question is over ${maxMessageChars} characters`, maxMessageChars);
}

/**
 * A question as every entry takes it (`/v1` messages and edit, Agent Protocol runs, MCP `ask`, the
 * queue worker; docs/api.md): trimmed first, then refused when blank (400) or over `MAX_MESSAGE_CHARS`
 * (413), with the same message wherever it came in. `path` names the field in a blank one's details.
 */
export function questionText(raw: string, maxMessageChars: number, path: string): string {
  const text = raw.trim();
  if (text.length === 0) throw new ValidationError("the question is empty", [{ path, message: "must not be blank" }]);
  if (text.length > maxMessageChars) throw questionTooLarge(maxMessageChars);
  return text;
}
