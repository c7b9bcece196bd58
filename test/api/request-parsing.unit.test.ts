import { describe, expect, it } from "vitest";
import { z } from "zod";
import type { HttpRequest } from "../../lib/api/http.js";
import { parseIdempotencyKey, parseJsonBody, prefersAsync, trimTrailingSlashes } from "../../lib/api/request-parsing.js";
import { ValidationError } from "../../lib/errors.js";
import { expectLinearWork, LINEAR_WORK_TIMEOUT_MS } from "../support/linear-work.js";

function request(fields: Partial<HttpRequest> = {}): HttpRequest {
  return { method: "POST", path: "/v1/conversations", headers: { "content-type": "application/json" }, query: {}, ...fields };
}

describe("api/request-parsing", () => {
  describe("prefersAsync", () => {
    it("returns true for respond-async among other preferences and parameters", () => {
      expect(prefersAsync(request({ headers: { prefer: "respond-async" } }))).toBe(true);
      expect(prefersAsync(request({ headers: { prefer: "return=minimal, RESPOND-ASYNC ; wait=5" } }))).toBe(true);
      expect(prefersAsync(request({ query: { async: "true" } }))).toBe(true);
    });

    it("returns false without the preference, or with it only inside another one", () => {
      expect(prefersAsync(request())).toBe(false);
      expect(prefersAsync(request({ headers: { prefer: "respond-asynchronously, wait=5" } }))).toBe(false);
      expect(prefersAsync(request({ headers: { prefer: "x=respond-async" } }))).toBe(false);
    });

    it(
      "reads the header in time linear in its length",
      () => {
        expectLinearWork((text) => prefersAsync(request({ headers: { prefer: text } })));
      },
      LINEAR_WORK_TIMEOUT_MS,
    );
  });

  describe("parseIdempotencyKey", () => {
    it("returns the key, or undefined without one", () => {
      expect(parseIdempotencyKey(request({ headers: { "idempotency-key": "k-1" } }))).toBe("k-1");
      expect(parseIdempotencyKey(request())).toBeUndefined();
    });

    it("throws ValidationError for a key with blanks or over 255 characters", () => {
      expect(() => parseIdempotencyKey(request({ headers: { "idempotency-key": "a b" } }))).toThrow(ValidationError);
      expect(() => parseIdempotencyKey(request({ headers: { "idempotency-key": "k".repeat(256) } }))).toThrow(ValidationError);
    });
  });

  describe("trimTrailingSlashes", () => {
    it("returns the path without trailing slashes, and the root as it is", () => {
      expect(trimTrailingSlashes("/v1/conversations///")).toBe("/v1/conversations");
      expect(trimTrailingSlashes("/")).toBe("/");
      expect(trimTrailingSlashes("///")).toBe("/");
    });

    it(
      "trims in time linear in the path",
      () => {
        expectLinearWork((text) => trimTrailingSlashes(`/${text}`));
      },
      LINEAR_WORK_TIMEOUT_MS,
    );
  });

  describe("parseJsonBody", () => {
    const schema = z.strictObject({ content: z.string() });

    it("throws ValidationError for deeply nested JSON, without walking it", () => {
      const deep = `{"content":${"[".repeat(50_000)}${"]".repeat(50_000)}}`;
      expect(() => parseJsonBody(request({ body: deep }), schema)).toThrow(ValidationError);
    });

    it(
      "parses in time linear in the body",
      () => {
        expectLinearWork(
          (body) => {
            try {
              parseJsonBody(request({ body }), schema);
            } catch (error) {
              if (!(error instanceof ValidationError)) throw error;
            }
          },
          { wrap: (text) => (text.startsWith("[") || text.startsWith("{") ? `{"content":${text}}` : JSON.stringify({ content: text })) },
        );
      },
      LINEAR_WORK_TIMEOUT_MS,
    );
  });
});
