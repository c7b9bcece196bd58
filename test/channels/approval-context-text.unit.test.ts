import { approvalContextHeading, approvalContextLines } from "../../lib/channels/approval-context-text.js";

const call = (tool: string, untrusted: boolean) => ({ tool, args: '{"q":1}', output: "rows", untrusted });

describe("channels/approval-context-text", () => {
  describe("approvalContextHeading", () => {
    it("returns a warning when the turn read untrusted output, and a plain heading otherwise", () => {
      expect(approvalContextHeading({ readUntrusted: true, calls: [], omittedCalls: 0 })).toMatch(/may carry instructions/);
      expect(approvalContextHeading({ readUntrusted: false, calls: [], omittedCalls: 0 })).toBe("Before this call, the turn ran:");
    });
  });

  describe("approvalContextLines", () => {
    it("returns one line per call, untrusted ones marked, after the count of those left out", () => {
      expect(approvalContextLines({ readUntrusted: true, omittedCalls: 2, calls: [call("sql_query", true), call("create_follow_up", false)] })).toEqual([
        "(2 earlier calls not shown)",
        '[untrusted] sql_query {"q":1} → rows',
        'create_follow_up {"q":1} → rows',
      ]);
    });
  });
});
