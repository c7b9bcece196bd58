import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import type { Principal } from "../../../lib/auth/principal.js";
import type { ChannelApprovals } from "../../../lib/channels/channel-decisions.js";
import {
  DEFAULT_SLACK_RESPONSE_URL_PREFIX,
  handleSlackInteraction,
  slackResponseUrlPrefix,
  type SlackInteractionOutcome,
} from "../../../lib/channels/slack/handle-slack-interaction.js";
import { editButtonValue, SLACK_APPROVAL_ACTIONS } from "../../../lib/channels/slack/slack-approval-actions.js";
import { slackViews } from "../../../lib/channels/slack/slack-approval-modal.js";
import { ApprovalConflictError, ForbiddenError } from "../../../lib/errors.js";
import type { ApprovalChoice } from "../../../lib/store/approval-store.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../../support/slack-api-endpoint.js";
import { signSlackRequest, TEST_SLACK_SIGNING_SECRET } from "../../support/slack-signing.js";

const CONVERSATION = "6f1c1b1e-8f3a-4a51-9d6f-0a1b2c3d4e5f";
const APPROVAL = "0b9c6f5e-3f1a-4c1e-9d7a-1f2e3d4c5b6a";
const AT = new Date("2026-12-01T10:00:00.000Z");
let slack: SlackApiEndpoint;

beforeAll(async () => {
  slack = await startSlackApiEndpoint({ botToken: "xoxb-interaction-test" });
});
afterAll(() => slack.close());
beforeEach(() => {
  slack.responses.length = 0;
});

const responseUrl = () => `${slackResponseUrlPrefix(slack.slackApiUrl)}actions/T1/123/secret`;

/** A block_actions payload as Slack posts it: form-encoded, signed over the raw body. */
function click(actionId: string, fields: Record<string, unknown> = {}, signedWith = TEST_SLACK_SIGNING_SECRET) {
  const payload = {
    type: "block_actions",
    user: { id: "U2" },
    team: { id: "T1" },
    response_url: responseUrl(),
    actions: [{ action_id: actionId, value: `${CONVERSATION}:${APPROVAL}` }],
    ...fields,
  };
  const rawBody = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
  return { headers: signSlackRequest(rawBody, { secret: signedWith }), rawBody };
}

function deciding(outcome: () => Error | undefined = () => undefined) {
  const asked: { principal: Principal; conversationId: string; approvalId: string; choice: ApprovalChoice }[] = [];
  const decide: ChannelApprovals["decide"] = async (principal, conversationId, approvalId, choice) => {
    asked.push({ principal, conversationId, approvalId, choice });
    const error = outcome();
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

/** A pending approval whose arguments the store withholds: sealed at rest, and the webhook carries no Encryption SDK. */
const withheld: ChannelApprovals = {
  decide: async () => {
    throw new Error("nothing is decided here");
  },
  forDecision: async () => ({ tool: "create_follow_up", args: {}, argsWithheld: true, status: "pending", deadline: AT }) as never,
};

async function handle(request: { headers: Record<string, string>; rawBody: string }, approvals: ChannelApprovals, withViews = false) {
  const outcomes: SlackInteractionOutcome[] = [];
  const response = await handleSlackInteraction({
    request,
    signingSecret: TEST_SLACK_SIGNING_SECRET,
    approvals,
    ...(withViews && { views: slackViews({ botToken: "xoxb-interaction-test", slackApiUrl: slack.slackApiUrl }) }),
    responseUrlPrefix: slackResponseUrlPrefix(slack.slackApiUrl),
    onOutcome: (o) => outcomes.push(o),
  });
  return { response, outcomes, posted: slack.responses.map((r) => r.body) };
}

describe("slackResponseUrlPrefix", () => {
  it("returns Slack's hooks prefix, or the origin of a stand-in Web API", () => {
    expect(slackResponseUrlPrefix(undefined)).toBe(DEFAULT_SLACK_RESPONSE_URL_PREFIX);
    expect(slackResponseUrlPrefix("http://127.0.0.1:9000/api/")).toBe("http://127.0.0.1:9000/");
  });
});

describe("handleSlackInteraction", () => {
  it("decides as the clicking user of the workspace and replaces the message through response_url", async () => {
    const { asked, approvals } = deciding();
    const { response, outcomes, posted } = await handle(click(SLACK_APPROVAL_ACTIONS.approve), approvals);
    expect(response).toEqual({ status: 200, headers: {}, body: "" });
    expect(asked).toEqual([
      { principal: { issuer: "slack", tenant: "T1", subject: "U2" }, conversationId: CONVERSATION, approvalId: APPROVAL, choice: { kind: "approve" } },
    ]);
    expect(outcomes).toEqual([{ kind: "decided", status: "approved", decided: true }]);
    expect(posted).toEqual([{ replace_original: true, text: "create_follow_up: approved by <@U2> at 2026-12-01T10:00:00.000Z." }]);
  });

  it("decides as a principal of the clicking user's own team (user.team_id), not the host's, for a Slack Connect guest", async () => {
    const { asked, approvals } = deciding();
    await handle(click(SLACK_APPROVAL_ACTIONS.approve, { user: { id: "U9GUEST", team_id: "T9GUEST" } }), approvals);
    expect(asked[0]?.principal).toEqual({ issuer: "slack", tenant: "T9GUEST", subject: "U9GUEST" });
  });

  it("answers 401 and decides nothing for a request not signed with the app's secret", async () => {
    const { asked, approvals } = deciding();
    const { response, outcomes } = await handle(click(SLACK_APPROVAL_ACTIONS.approve, {}, "another-secret"), approvals);
    expect(response.status).toBe(401);
    expect(outcomes).toEqual([{ kind: "rejected", reason: "bad_signature" }]);
    expect(asked).toEqual([]);
  });

  it("answers 400 for a payload that is not JSON", async () => {
    const rawBody = "payload=%7Bnot-json";
    const { response, outcomes } = await handle({ headers: signSlackRequest(rawBody), rawBody }, deciding().approvals);
    expect(response.status).toBe(400);
    expect(outcomes).toEqual([{ kind: "invalid" }]);
  });

  it("ignores, with an empty 200, another app's button or a value that names no approval", async () => {
    const { asked, approvals } = deciding();
    for (const request of [
      click("someone_elses_button"),
      click(SLACK_APPROVAL_ACTIONS.reject, { actions: [{ action_id: SLACK_APPROVAL_ACTIONS.reject, value: "not-ids" }] }),
    ]) {
      const { response, outcomes } = await handle(request, approvals);
      expect(response).toEqual({ status: 200, headers: {}, body: "" });
      expect(outcomes).toEqual([{ kind: "ignored" }]);
    }
    expect(asked).toEqual([]);
  });

  it.each([
    { type: "view_closed", user: { id: "U2" }, team: { id: "T1" }, view: { callback_id: "threadwise_approval_edit", private_metadata: "{}" } },
    { type: "shortcut", callback_id: "someone_elses_shortcut", user: { id: "U2" }, team: { id: "T1" }, trigger_id: "1.2.3" },
    { type: "message_action", callback_id: "x", user: { id: "U2" }, team: { id: "T1" }, message: { ts: "1.1", text: "hi" } },
    { type: "block_suggestion", action_id: "x", value: "q", user: { id: "U2" }, team: { id: "T1" } },
  ])("ignores a $type payload with an empty 200, deciding nothing", async (payload) => {
    const { asked, approvals } = deciding();
    const rawBody = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
    const { response, outcomes } = await handle({ headers: signSlackRequest(rawBody), rawBody }, approvals);
    expect(response).toEqual({ status: 200, headers: {}, body: "" });
    expect(outcomes).toEqual([{ kind: "ignored" }]);
    expect(asked).toEqual([]);
  });

  it("tells only the clicking user when they may not decide, and replaces the message for an approval already decided", async () => {
    const forbidden = await handle(click(SLACK_APPROVAL_ACTIONS.approve), deciding(() => new ForbiddenError("no")).approvals);
    expect(forbidden.outcomes).toEqual([{ kind: "refused", code: "forbidden" }]);
    expect(forbidden.posted).toEqual([{ response_type: "ephemeral", replace_original: false, text: "You may not decide this approval." }]);
    slack.responses.length = 0;
    const conflict = await handle(click(SLACK_APPROVAL_ACTIONS.reject), deciding(() => new ApprovalConflictError("m", APPROVAL, "approved")).approvals);
    expect(conflict.posted).toEqual([{ replace_original: true, text: "This call was already decided (approved)." }]);
  });

  it("answers an edit over 20,000 characters with the error under the modal's input, deciding nothing", async () => {
    const { asked, approvals } = deciding();
    const payload = {
      type: "view_submission",
      user: { id: "U2", team_id: "T1" },
      team: { id: "T1" },
      view: {
        callback_id: "threadwise_approval_edit",
        private_metadata: JSON.stringify({ c: CONVERSATION, a: APPROVAL }),
        state: { values: { args: { args: { type: "plain_text_input", value: JSON.stringify({ title: "x".repeat(20_001) }) } } } },
      },
    };
    const rawBody = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
    const { response, outcomes } = await handle({ headers: signSlackRequest(rawBody), rawBody }, approvals);
    expect(JSON.parse(response.body)).toEqual({
      response_action: "errors",
      errors: { args: "Too long: the arguments may have at most 20,000 characters." },
    });
    expect(outcomes).toEqual([{ kind: "edit_refused", code: "invalid_arguments" }]);
    expect(asked).toEqual([]);
  });

  it("prefills the edit modal from the Edit button the worker wrote when the store withholds sealed arguments", async () => {
    const value = editButtonValue(`${CONVERSATION}:${APPROVAL}`, { title: "Call the supplier" });
    const before = slack.views.length;
    const request = click(SLACK_APPROVAL_ACTIONS.edit, { trigger_id: "1.2.3", actions: [{ action_id: SLACK_APPROVAL_ACTIONS.edit, value }] });
    const { outcomes } = await handle(request, withheld, true);
    expect(outcomes).toEqual([{ kind: "editing", opened: true }]);
    const input = ((slack.views[before]?.view.blocks ?? []) as { type: string; element?: { initial_value?: string } }[]).find((b) => b.type === "input");
    expect(JSON.parse(input?.element?.initial_value ?? "")).toEqual({ title: "Call the supplier" });
  });

  it("says to edit elsewhere, opening no modal, when the store withholds the arguments and the button holds none", async () => {
    const before = slack.views.length;
    const { posted } = await handle(click(SLACK_APPROVAL_ACTIONS.edit, { trigger_id: "1.2.3" }), withheld, true);
    expect(slack.views.length).toBe(before);
    const note = expect.stringContaining("edit this call in the console or through the API");
    expect(posted).toEqual([expect.objectContaining({ response_type: "ephemeral", text: note })]);
  });

  it("follows no response_url outside Slack's prefix", async () => {
    const { posted, outcomes } = await handle(click(SLACK_APPROVAL_ACTIONS.approve, { response_url: "https://evil.example/actions/1" }), deciding().approvals);
    expect(outcomes[0]).toMatchObject({ kind: "decided" });
    expect(posted).toEqual([]);
  });
});
