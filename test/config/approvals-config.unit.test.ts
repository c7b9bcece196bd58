import { describe, expect, it } from "vitest";
import { approversOf, DEFAULT_APPROVAL_TTL_SECONDS, parseApprovalsConfig } from "../../lib/config/approvals-config.js";
import { loadToolsConfig } from "../../lib/config/tools-config.js";
import { ValidationError } from "../../lib/errors.js";

const NAMES = ["create_follow_up", "sql_query"];

function failure(run: () => unknown): ValidationError {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return error;
    throw error;
  }
  throw new Error("expected a ValidationError");
}

describe("parseApprovalsConfig", () => {
  it("returns no held tools and the default deadline when unset", () => {
    expect(parseApprovalsConfig(undefined, undefined, NAMES)).toEqual({ tools: {}, ttlSeconds: DEFAULT_APPROVAL_TTL_SECONDS });
  });

  it("returns the policies and deadline as configured", () => {
    const raw = JSON.stringify({ create_follow_up: { require: { when: { argument: "owner", present: true } }, approvers: { roles: ["lead"] } } });
    expect(parseApprovalsConfig(raw, 60, NAMES)).toEqual({
      tools: { create_follow_up: { require: { when: { argument: "owner", present: true } }, approvers: { roles: ["lead"] } } },
      ttlSeconds: 60,
    });
  });

  it("throws naming TOOL_APPROVALS when the value is not JSON", () => {
    expect(failure(() => parseApprovalsConfig("{", undefined, NAMES)).details).toEqual([{ path: "TOOL_APPROVALS", message: "not JSON" }]);
  });

  it("throws naming an unknown tool, which would otherwise stay unguarded", () => {
    const error = failure(() => parseApprovalsConfig(JSON.stringify({ create_followup: { require: "always" } }), undefined, NAMES));
    expect(error.details?.[0].message).toContain("unknown tool name create_followup");
  });

  it.each([[{ create_follow_up: {} }], [{ create_follow_up: { require: "sometimes" } }], [{ create_follow_up: { require: { when: { argument: "owner" } } } }]])(
    "throws, saying which values require takes rather than zod's bare Invalid input, for %j",
    (policies) => {
      expect(failure(() => parseApprovalsConfig(JSON.stringify(policies), undefined, NAMES)).details).toEqual([
        {
          path: "TOOL_APPROVALS.create_follow_up.require",
          message:
            'expected "always", "never" or {"when": {"argument": <name>, then "present": true, "equals": <value>, "in": [<values>] or "atLeast": <number>}}',
        },
      ]);
    },
  );

  it("throws for a policy without a valid require or with approvers naming nobody", () => {
    failure(() => parseApprovalsConfig(JSON.stringify({ create_follow_up: { require: "sometimes" } }), undefined, NAMES));
    failure(() => parseApprovalsConfig(JSON.stringify({ create_follow_up: { require: "always", approvers: { requester: false } } }), undefined, NAMES));
    failure(() =>
      parseApprovalsConfig(JSON.stringify({ create_follow_up: { require: { when: { argument: "a", present: true, equals: 1 } } } }), undefined, NAMES),
    );
  });
});

describe("approversOf", () => {
  it("returns the requester when the policy names no approvers", () => {
    expect(approversOf({ require: "always" })).toEqual({ requester: true, roles: [] });
  });

  it("returns only the roles when the policy names roles alone", () => {
    expect(approversOf({ require: "always", approvers: { roles: ["lead"] } })).toEqual({ requester: false, roles: ["lead"] });
  });
});

describe("loadToolsConfig", () => {
  it("returns the approvals of TOOL_APPROVALS and APPROVAL_TTL_SECONDS", () => {
    const config = loadToolsConfig({ TOOL_APPROVALS: '{"create_follow_up": {"require": "always"}}', APPROVAL_TTL_SECONDS: "120" });
    expect(config.approvals).toEqual({ tools: { create_follow_up: { require: "always" } }, ttlSeconds: 120 });
  });
});
