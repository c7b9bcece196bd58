import type { z } from "zod";
import { ValidationError } from "./errors.js";

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
