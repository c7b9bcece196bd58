import { ToolMessage } from "@langchain/core/messages";
import { describe, expect, it } from "vitest";
import { offloadedArtifact } from "../../lib/model-view/tool-output-artifact.js";

const reference = { handle: "art-1", bytes: 120_000, tokens: 30_000, preview: "month,revenue…" };

describe("offloadedArtifact", () => {
  it("returns the artifact reference of an offloaded output", () => {
    expect(offloadedArtifact(new ToolMessage({ tool_call_id: "c", content: reference.preview, artifact: reference }))).toEqual(reference);
  });

  it("returns undefined for an inline output", () => {
    expect(offloadedArtifact(new ToolMessage({ tool_call_id: "c", content: "3 rows" }))).toBeUndefined();
    expect(offloadedArtifact(new ToolMessage({ tool_call_id: "c", content: "3 rows", artifact: null }))).toBeUndefined();
  });

  it("returns undefined for an artifact field that is not a reference (a tool's own artifact)", () => {
    for (const artifact of [{ handle: "" }, { ...reference, tokens: -1 }, "text"]) {
      expect(offloadedArtifact(new ToolMessage({ tool_call_id: "c", content: "x", artifact }))).toBeUndefined();
    }
  });
});
