import { describe, expect, it } from "vitest";
import { ToolError } from "../../../lib/errors.js";
import { queryCancelled, queryTimedOut } from "../../../lib/tools/sql/query-engine.js";

describe("query engine errors", () => {
  describe("queryTimedOut", () => {
    it("returns a ToolError of sql_query naming the limit and what the model can do", () => {
      const error = queryTimedOut(5_000);
      expect(error).toBeInstanceOf(ToolError);
      expect(error).toMatchObject({
        toolName: "sql_query",
        message: "the query ran longer than 5000 ms and was stopped; aggregate more, filter to a shorter period, or add LIMIT",
      });
    });
  });

  describe("queryCancelled", () => {
    it("returns a ToolError of sql_query saying the query was cancelled", () => {
      expect(queryCancelled()).toMatchObject({ name: "ToolError", toolName: "sql_query", message: "the query was cancelled" });
    });
  });
});
