import { describe, expect, it } from "vitest";
import { editedArgumentsOf, invalidEditText } from "../../lib/channels/channel-decisions.js";
import { ValidationError } from "../../lib/errors.js";

describe("editedArgumentsOf", () => {
  it("returns the arguments of a JSON object", () => {
    expect(editedArgumentsOf('{"title": "Call", "n": 2}')).toEqual({ args: { title: "Call", n: 2 } });
  });

  it.each([[undefined], [""], ["{title"]])("returns the not-JSON error for %j", (text) => {
    expect(editedArgumentsOf(text)).toEqual({ error: "Not JSON: write the arguments as a JSON object." });
  });

  it.each([["null"], ["[1]"], ['"x"'], ["3"]])("returns the not-an-object error for the JSON %s", (text) => {
    expect(editedArgumentsOf(text)).toEqual({ error: "The arguments must be a JSON object." });
  });
});

describe("invalidEditText", () => {
  it("returns each problem with its path under the arguments, joined", () => {
    const error = new ValidationError("refused", [
      { path: "args.title", message: "Too small" },
      { path: "args.(arguments)", message: "Unrecognized key" },
      { path: "args", message: "Expected object" },
    ]);
    expect(invalidEditText(error)).toBe("title: Too small; (arguments): Unrecognized key; (arguments): Expected object");
  });

  it("returns the error's message when it names no problem", () => {
    expect(invalidEditText(new ValidationError("the edit is refused"))).toBe("the edit is refused");
  });
});
