import { describe, expect, it } from "vitest";
import { ApprovalPolicy } from "../../lib/approvals/approval-policy.js";
import { apiPrincipal, slackPrincipal } from "../../lib/auth/principal.js";
import { ValidationError } from "../../lib/errors.js";

const TOOLS = [
  { name: "create_follow_up", sideEffects: true },
  { name: "sql_query", sideEffects: false },
];

describe("ApprovalPolicy", () => {
  describe("constructor", () => {
    it("throws a ValidationError naming the setting's entry when a read-only tool is configured to wait", () => {
      let thrown: unknown;
      try {
        new ApprovalPolicy({ sql_query: { require: "always" } }, TOOLS);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(ValidationError);
      expect(thrown).toMatchObject({
        message: "invalid configuration",
        details: [{ path: "TOOL_APPROVALS.sql_query", message: "a read-only tool never waits for approval" }],
      });
    });

    it("accepts a read-only tool configured never to wait, and ignores a tool this deployment leaves off", () => {
      const policy = new ApprovalPolicy({ sql_query: { require: "never" }, query_semantic_model: { require: "always" } }, TOOLS);
      expect(policy.approversFor("sql_query", {})).toBeUndefined();
    });
  });

  describe("approversFor", () => {
    it("returns approvers for any arguments once the turn read untrusted output, with afterUntrustedOutput: wait", () => {
      const policy = new ApprovalPolicy({ create_follow_up: { require: { when: { argument: "owner", present: true } }, afterUntrustedOutput: "wait" } }, TOOLS);
      expect(policy.approversFor("create_follow_up", { title: "x" }, { readUntrusted: false })).toBeUndefined();
      expect(policy.approversFor("create_follow_up", { title: "x" }, { readUntrusted: true })).toEqual({ requester: true, roles: [] });
      const never = new ApprovalPolicy({ create_follow_up: { require: "never", afterUntrustedOutput: "wait" } }, TOOLS);
      expect(never.approversFor("create_follow_up", {}, { readUntrusted: true })).toBeDefined();
      expect(never.approversFor("create_follow_up", {}, { readUntrusted: false })).toBeUndefined();
    });

    it("returns undefined after untrusted output for a policy without afterUntrustedOutput: only its rule decides", () => {
      const policy = new ApprovalPolicy({ create_follow_up: { require: { when: { argument: "owner", present: true } } } }, TOOLS);
      expect(policy.approversFor("create_follow_up", { title: "x" }, { readUntrusted: true })).toBeUndefined();
    });

    it("returns the requester for a tool that always waits", () => {
      const policy = new ApprovalPolicy({ create_follow_up: { require: "always" } }, TOOLS);
      expect(policy.approversFor("create_follow_up", { title: "x" })).toEqual({ requester: true, roles: [] });
    });

    it("returns undefined for a tool without a policy", () => {
      expect(new ApprovalPolicy({}, TOOLS).approversFor("create_follow_up", {})).toBeUndefined();
    });

    it.each([
      [{ argument: "owner", present: true as const }, { owner: "ann" }, { owner: "" }],
      [{ argument: "priority", equals: "high" }, { priority: "high" }, { priority: "low" }],
      [{ argument: "region", in: ["EU", "US"] }, { region: "EU" }, { region: "APAC" }],
      [{ argument: "amount", atLeast: 100 }, { amount: 100 }, { amount: "1000" }],
    ])("returns approvers only when the rule %j matches", (when, matching, other) => {
      const policy = new ApprovalPolicy({ create_follow_up: { require: { when } } }, TOOLS);
      expect(policy.approversFor("create_follow_up", matching)).toBeDefined();
      expect(policy.approversFor("create_follow_up", other)).toBeUndefined();
    });

    it.each([
      ["a null value is not present", { argument: "owner", present: true as const }, { owner: null }],
      ["a number below the threshold", { argument: "amount", atLeast: 100 }, { amount: 99.5 }],
      ["an object is in no list", { argument: "region", in: ["EU"] }, { region: { toString: () => "EU" } }],
    ])("returns undefined when the rule does not match: %s", (_name, when, args) => {
      const policy = new ApprovalPolicy({ create_follow_up: { require: { when } } }, TOOLS);
      expect(policy.approversFor("create_follow_up", args)).toBeUndefined();
    });

    it("returns approvers for a number in a rule's list", () => {
      const policy = new ApprovalPolicy({ create_follow_up: { require: { when: { argument: "tier", in: [1, 2] } } } }, TOOLS);
      expect(policy.approversFor("create_follow_up", { tier: 2 })).toEqual({ requester: true, roles: [] });
      expect(policy.approversFor("create_follow_up", { tier: 3 })).toBeUndefined();
    });

    it("does not read a rule's argument from the object prototype", () => {
      const policy = new ApprovalPolicy({ create_follow_up: { require: { when: { argument: "constructor", present: true } } } }, TOOLS);
      expect(policy.approversFor("create_follow_up", {})).toBeUndefined();
    });
  });

  describe("mayDecide", () => {
    const requester = slackPrincipal("T1", "U1");

    it("returns true for the requester when the requester may approve", () => {
      expect(ApprovalPolicy.mayDecide({ requester: true, roles: [] }, requester, { principal: slackPrincipal("T1", "U1"), roles: [] })).toBe(true);
    });

    it("returns false for the same subject of another issuer or tenant", () => {
      const approvers = { requester: true, roles: [] };
      expect(ApprovalPolicy.mayDecide(approvers, requester, { principal: slackPrincipal("T2", "U1"), roles: [] })).toBe(false);
      expect(ApprovalPolicy.mayDecide(approvers, requester, { principal: apiPrincipal("U1", "T1"), roles: [] })).toBe(false);
    });

    it("returns false for another subject of the requester's issuer and tenant", () => {
      expect(ApprovalPolicy.mayDecide({ requester: true, roles: [] }, requester, { principal: slackPrincipal("T1", "U2"), roles: [] })).toBe(false);
    });

    it("returns true for a caller with an approver role and false for the requester without it", () => {
      const approvers = { requester: false, roles: ["lead"] };
      expect(ApprovalPolicy.mayDecide(approvers, requester, { principal: slackPrincipal("T1", "U9"), roles: ["lead"] })).toBe(true);
      expect(ApprovalPolicy.mayDecide(approvers, requester, { principal: requester, roles: [] })).toBe(false);
    });
  });
});
