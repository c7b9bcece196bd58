import { ToolMessage } from "@langchain/core/messages";
import { PROVENANCE_KEY, provenanceOf, withheldPeriod } from "../../lib/model-view/provenance.js";

describe("provenance", () => {
  describe("provenanceOf", () => {
    it("returns the provenance a tool message keeps beside its content", () => {
      const message = new ToolMessage({
        content: "rows",
        tool_call_id: "c1",
        additional_kwargs: { [PROVENANCE_KEY]: [{ tool: "sql_query", roles: ["analyst"] }] },
      });
      expect(provenanceOf(message)).toEqual([{ tool: "sql_query", roles: ["analyst"] }]);
    });

    it("returns undefined for a message stored without one", () => {
      expect(provenanceOf(new ToolMessage({ content: "rows", tool_call_id: "c1" }))).toBeUndefined();
    });
  });

  describe("withheldPeriod", () => {
    it("returns true only for withheld arguments that set a period", () => {
      expect(withheldPeriod({ withheld: true, period: true })).toBe(true);
      expect(withheldPeriod({ withheld: true })).toBe(false);
      expect(withheldPeriod({ period: true })).toBe(false);
    });
  });
});
