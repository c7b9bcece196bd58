import { describe, expect, it } from "vitest";
import { xrayTraceHeader } from "../../lib/observability/trace-context.js";

describe("xrayTraceHeader", () => {
  it("returns the root, the parent and the sampling decision", () => {
    expect(xrayTraceHeader({ root: "1-67891233-abcdef012345678912345678", parent: "53995c3f42cd8ad8", sampled: true })).toBe(
      "Root=1-67891233-abcdef012345678912345678;Parent=53995c3f42cd8ad8;Sampled=1",
    );
  });

  it("returns the header without a parent, and Sampled=0 for an unsampled trace", () => {
    expect(xrayTraceHeader({ root: "1-a-b", sampled: false })).toBe("Root=1-a-b;Sampled=0");
  });

  it("returns no header outside a trace", () => {
    expect(xrayTraceHeader({ sampled: true })).toBeUndefined();
  });
});
