import type { z } from "zod";
import { PayloadTooLargeError, UnsupportedMediaTypeError, ValidationError } from "../errors.js";
import type { HttpRequest } from "./http.js";
import { parseOrThrow } from "../validation.js";

/** Largest request body accepted, in bytes. */
export const MAX_BODY_BYTES = 256 * 1024;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Conversation and turn ids are UUIDs; anything else is rejected before reaching the database. */
export function parseId(value: string, name: string): string {
  if (!UUID.test(value)) throw new ValidationError(`malformed ${name}`, [{ path: name, message: "expected a UUID" }]);
  return value.toLowerCase();
}

export function parseJsonBody<T>(request: HttpRequest, schema: z.ZodType<T>, options: { optional?: boolean } = {}): T {
  const raw = request.body ?? "";
  if (Buffer.byteLength(raw, "utf8") > MAX_BODY_BYTES) throw new PayloadTooLargeError(`request body over ${MAX_BODY_BYTES} bytes`, MAX_BODY_BYTES);
  let value: unknown = {};
  if (raw.trim().length > 0) {
    const type = request.headers["content-type"];
    if (type && !/^application\/(.+\+)?json\b/i.test(type)) throw new UnsupportedMediaTypeError("request body must be application/json");
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw new ValidationError("request body is not valid JSON", undefined, { cause: error });
    }
  } else if (!options.optional) {
    throw new ValidationError("request body is required");
  }
  return parseOrThrow(schema, value, "request body is invalid", "(body)");
}

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{1,255}$/;

/** The `Idempotency-Key` header: 1 to 255 printable ASCII characters, or absent. */
export function parseIdempotencyKey(request: HttpRequest): string | undefined {
  const key = request.headers["idempotency-key"];
  if (key === undefined) return undefined;
  if (!IDEMPOTENCY_KEY.test(key))
    throw new ValidationError("malformed Idempotency-Key", [{ path: "Idempotency-Key", message: "1 to 255 printable ASCII characters" }]);
  return key;
}

/**
 * `Prefer: respond-async` (RFC 7240) or `?async=true`: answer 202 at once and let the worker run
 * the turn. The header is split into its preferences rather than searched with a pattern.
 */
export function prefersAsync(request: HttpRequest): boolean {
  if (request.query.async === "true") return true;
  const prefer = request.headers.prefer;
  if (prefer === undefined) return false;
  return prefer.split(",").some((preference) => preference.split(";", 1)[0].trim().toLowerCase() === "respond-async");
}

/** The path without trailing slashes ("/" stays "/"), trimmed by hand: `/\/+$/` retries at every slash of a long run. */
export function trimTrailingSlashes(path: string): string {
  let end = path.length;
  while (end > 1 && path.charCodeAt(end - 1) === 0x2f) end -= 1;
  return path.slice(0, end);
}

export function parseQuery<T>(request: HttpRequest, schema: z.ZodType<T>): T {
  return parseOrThrow(schema, request.query, "query is invalid");
}
