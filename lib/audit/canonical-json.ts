import { createHash } from "node:crypto";

/**
 * JSON with object keys sorted at every depth, dates as ISO 8601 and undefined members left out:
 * one text per value, whatever order its keys were written in, so a hash of it can be checked by
 * anyone who holds the value (a deletion receipt, an audit record, an export's manifest).
 */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(normalize(value));
}

function normalize(value: unknown): unknown {
  if (value instanceof Date) return value.toISOString();
  if (Array.isArray(value)) return value.map((item) => (item === undefined ? null : normalize(item)));
  if (value !== null && typeof value === "object") {
    const out: Record<string, unknown> = {};
    for (const key of Object.keys(value).sort()) {
      const member = (value as Record<string, unknown>)[key];
      if (member !== undefined) out[key] = normalize(member);
    }
    return out;
  }
  return value;
}

/** SHA-256 of text, as lowercase hex. */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** SHA-256 over a value's canonical JSON. */
export function canonicalHash(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
