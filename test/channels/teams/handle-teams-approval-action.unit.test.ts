import { describe, expect, it } from "vitest";
import type { Principal } from "../../../lib/auth/principal.js";
import type { ChannelApprovals } from "../../../lib/channels/channel-decisions.js";
import { handleTeamsApprovalAction, isApprovalAction } from "../../../lib/channels/teams/handle-teams-approval-action.js";
import { TEAMS_APPROVAL_VERBS } from "../../../lib/channels/teams/teams-approval-card.js";
import { ApprovalConflictError, ApprovalExpiredError, ApprovalSupersededError, ForbiddenError, NotFoundError } from "../../../lib/errors.js";
import type { ApprovalChoice } from "../../../lib/store/approval-store.js";

const CONVERSATION = "6f1c1b1e-8f3a-4a51-9d6f-0a1b2c3d4e5f";
const APPROVAL = "0b9c6f5e-3f1a-4c1e-9d7a-1f2e3d4c5b6a";
const AT = new Date("2026-12-01T10:00:00.000Z");

function invoke(verb: string, fields: Record<string, unknown> = {}) {
  return {
    type: "invoke",
    name: "adaptiveCard/action",
    from: { id: "29:teams-user", aadObjectId: "aad-user-1" },
    conversation: { tenantId: "tenant-1" },
    channelData: { tenant: { id: "tenant-1" } },
    value: { action: { verb, data: { conversationId: CONVERSATION, approvalId: APPROVAL } } },
    ...fields,
  };
}

/** The decisions the handler asked for, and the answer (or error) each gets; the approval and decision as the store records them. */
function deciding(outcome: (choice: ApprovalChoice, principal: Principal) => Error | undefined) {
  const asked: { principal: Principal; conversationId: string; approvalId: string; choice: ApprovalChoice }[] = [];
  const decide: ChannelApprovals["decide"] = async (principal, conversationId, approvalId, choice) => {
    asked.push({ principal, conversationId, approvalId, choice });
    const error = outcome(choice, principal);
    if (error) throw error;
    const status = choice.kind === "approve" ? "approved" : "rejected";
    return { approval: { tool: "create_follow_up", status, decision: { ...choice, by: principal, at: AT } } as never, decided: true, resumed: true };
  };
  const approvals: ChannelApprovals = {
    decide,
    forDecision: async () => {
      throw new Error("the edit form is not opened here");
    },
  };
  return { asked, approvals };
}

const answer = (response: { status: number; body: string }) => ({ status: response.status, ...JSON.parse(response.body) });
const cardText = (body: { value: { body: { text: string }[] } }) => body.value.body[0].text;

describe("isApprovalAction", () => {
  it("returns true for an adaptive card action invoke only", () => {
    expect(isApprovalAction(invoke(TEAMS_APPROVAL_VERBS.approve))).toBe(true);
    expect(isApprovalAction({ type: "message", text: "hi" })).toBe(false);
    expect(isApprovalAction({ type: "invoke", name: "composeExtension/query" })).toBe(false);
    expect(isApprovalAction(null)).toBe(false);
  });
});

describe("handleTeamsApprovalAction", () => {
  it("decides as the clicking user of the activity's tenant and answers with the card saying who decided and when", async () => {
    const { asked, approvals } = deciding(() => undefined);
    const response = answer(await handleTeamsApprovalAction(invoke(TEAMS_APPROVAL_VERBS.approve), approvals));
    expect(asked).toEqual([
      {
        principal: { issuer: "teams", tenant: "tenant-1", subject: "aad-user-1" },
        conversationId: CONVERSATION,
        approvalId: APPROVAL,
        choice: { kind: "approve" },
      },
    ]);
    expect(response).toMatchObject({ status: 200, statusCode: 200, type: "application/vnd.microsoft.card.adaptive" });
    expect(cardText(response)).toBe("create_follow_up: approved by aad-user-1 at 2026-12-01T10:00:00.000Z.");
  });

  it("rejects for the reject verb", async () => {
    const { asked, approvals } = deciding(() => undefined);
    await handleTeamsApprovalAction(invoke(TEAMS_APPROVAL_VERBS.reject), approvals);
    expect(asked[0]).toMatchObject({ principal: { tenant: "tenant-1", subject: "aad-user-1" }, choice: { kind: "reject" } });
  });

  it("decides nothing for an action without an Entra object id or tenant, never as the channel account id it names", async () => {
    const { asked, approvals } = deciding(() => undefined);
    for (const fields of [{ from: { id: "aad-user-1" } }, { channelData: {} }, { conversation: { tenantId: "another-tenant" } }]) {
      const response = answer(await handleTeamsApprovalAction(invoke(TEAMS_APPROVAL_VERBS.approve, fields), approvals));
      expect(response).toMatchObject({ status: 200, statusCode: 401 });
    }
    expect(asked).toEqual([]);
  });

  it("answers 400 BadRequest inside the invoke, deciding nothing, for an unknown verb or a malformed action", async () => {
    const { asked, approvals } = deciding(() => undefined);
    for (const body of [invoke("threadwise.approval.maybe"), { ...invoke(TEAMS_APPROVAL_VERBS.approve), value: { action: { verb: "x", data: {} } } }]) {
      expect(answer(await handleTeamsApprovalAction(body, approvals))).toMatchObject({ status: 200, statusCode: 400, value: { code: "BadRequest" } });
    }
    expect(asked).toEqual([]);
  });

  it("answers a message only, keeping the buttons, to a user who may not decide or for an approval that is gone", async () => {
    for (const [error, text] of [
      [new ForbiddenError("no"), "You may not decide this approval."],
      [new NotFoundError("gone"), "This approval no longer exists."],
    ] as const) {
      const response = answer(await handleTeamsApprovalAction(invoke(TEAMS_APPROVAL_VERBS.approve), deciding(() => error).approvals));
      expect(response).toMatchObject({ statusCode: 200, type: "application/vnd.microsoft.activity.message", value: text });
    }
  });

  it("replaces the buttons with why nothing was decided: already decided, superseded, expired", async () => {
    const cases = [
      [new ApprovalConflictError("m", APPROVAL, "rejected"), "This call was already decided (rejected)."],
      [new ApprovalSupersededError("m", APPROVAL, "superseded"), "A newer question replaced this one; the call will not run."],
      [new ApprovalExpiredError("m", APPROVAL, "expired"), "This approval expired; the call was not run."],
    ] as const;
    for (const [error, text] of cases) {
      expect(cardText(answer(await handleTeamsApprovalAction(invoke(TEAMS_APPROVAL_VERBS.approve), deciding(() => error).approvals)))).toBe(text);
    }
  });

  it("throws any other error", async () => {
    await expect(handleTeamsApprovalAction(invoke(TEAMS_APPROVAL_VERBS.approve), deciding(() => new TypeError("bug")).approvals)).rejects.toBeInstanceOf(
      TypeError,
    );
  });
});
