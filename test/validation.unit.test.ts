import { describe, expect, it } from "vitest";
import { z } from "zod";
import { PayloadTooLargeError, ValidationError } from "../lib/errors.js";
import { issueDetails, parseJsonSetting, parseOrThrow, questionText, questionTooLarge } from "../lib/validation.js";

const schema = z.object({ name: z.string().min(1), tags: z.array(z.string()) });

function thrown(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  return undefined;
}

describe("validation", () => {
  describe("issueDetails", () => {
    it("returns each issue's dotted path and message, the given path for the root", () => {
      const root = z.string().safeParse(1);
      const nested = schema.safeParse({ name: "", tags: ["a", 2] });
      if (root.success || nested.success) throw new Error("expected failures");
      expect(issueDetails(root.error, "body").map((d) => d.path)).toEqual(["body"]);
      expect(issueDetails(nested.error).map((d) => d.path)).toEqual(["name", "tags.1"]);
      expect(issueDetails(nested.error).every((d) => d.message.length > 0)).toBe(true);
    });
  });

  describe("parseOrThrow", () => {
    it("returns the parsed value", () => {
      expect(parseOrThrow(schema, { name: "x", tags: [] }, "invalid body")).toEqual({ name: "x", tags: [] });
    });

    it("throws ValidationError with the message and the issues", () => {
      const error = thrown(() => parseOrThrow(schema, { name: "x" }, "invalid body"));
      expect(error).toBeInstanceOf(ValidationError);
      expect(error).toMatchObject({ message: "invalid body", details: [{ path: "tags" }] });
    });
  });

  describe("parseJsonSetting", () => {
    it("returns the JSON value of a setting", () => {
      expect(parseJsonSetting('{"sql_query":["analyst"]}', "TOOL_ROLES")).toEqual({ sql_query: ["analyst"] });
    });

    it("throws ValidationError naming the setting, with the parse error as cause, for text that is not JSON", () => {
      const error = thrown(() => parseJsonSetting("{sql_query", "TOOL_ROLES"));
      expect(error).toMatchObject({ name: "ValidationError", message: "invalid configuration", details: [{ path: "TOOL_ROLES", message: "not JSON" }] });
      expect((error as Error).cause).toBeInstanceOf(SyntaxError);
    });
  });
});

describe("questionText", () => {
  it("returns the question trimmed, measured after trimming", () => {
    expect(questionText(`  ${"x".repeat(10)}\n\n`, 10, "content")).toBe("x".repeat(10));
  });

  it("throws PayloadTooLargeError with the limit and one message, whatever the field, for a question over it", () => {
    const refusals = ["content", "question", "input.messages.0.content"].map((path) => {
      try {
        questionText("x".repeat(11), 10, path);
      } catch (error) {
        return error;
      }
    });
    for (const error of refusals) expect(error).toBeInstanceOf(PayloadTooLargeError);
    expect(refusals.map((e) => [(e as PayloadTooLargeError).message, (e as PayloadTooLargeError).limit])).toEqual(
      Array(3).fill(["the question is over 10 characters", 10]),
    );
  });

  it("throws ValidationError naming the field for a blank question", () => {
    expect(() => questionText(" \n ", 10, "question")).toThrow(
      expect.objectContaining({ name: "ValidationError", message: "the question is empty", details: [{ path: "question", message: "must not be blank" }] }),
    );
  });
});

describe("questionTooLarge", () => {
  it("returns the 413 every entry answers", () => {
    expect(questionTooLarge(16_000)).toMatchObject({ name: "PayloadTooLargeError", message: "the question is over 16000 characters", limit: 16_000 });
  });
});
