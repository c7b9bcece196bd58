import { z } from "zod";
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

export function parseQuery<T>(request: HttpRequest, schema: z.ZodType<T>): T {
  return parseOrThrow(schema, request.query, "query is invalid");
}
