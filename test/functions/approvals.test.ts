import { APPROVAL_SWEEP_EVENT } from "../../lib/approvals/index.js";
import { argsHash } from "../../lib/store/approval-store.js";
import type { ConverseRequest } from "../support/converse-endpoint.js";
import { appMention, envelope, TEAM, USER } from "../channels/slack/fixtures.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../support/slack-api-endpoint.js";
import { signSlackRequest } from "../support/slack-signing.js";
import { emfOf } from "./support/emf.js";
import { apiEvent, lambdaContext, sqsEvent, sqsRecord } from "./support/events.js";
import { startHarness, type Harness } from "./support/harness.js";

/** Roles by Slack user group only: the slack function must read the group to let its member decide. */
const LEADS_GROUP = "S0LEADS";
const GROUP_LEAD = "U0GROUPLEAD";

let h: Harness;
let slackApi: SlackApiEndpoint;

/** The model asks for a follow-up when told to, and reports what the tool answered. */
function respond(request: ConverseRequest) {
  const last = request.messages[request.messages.length - 1];
  const result = last.content.flatMap((b) => ("toolResult" in b ? b.toolResult.content.flatMap((c) => ("text" in c ? [c.text] : [])) : []));
  if (result.length > 0) return { text: `tool said: ${result.join(" ")}` };
  return { toolUses: [{ name: "create_follow_up", input: { title: "Call the supplier" } }] };
}

beforeAll(async () => {
  // The harness's secret holds this bot token.
  slackApi = await startSlackApiEndpoint({ botToken: "xoxb-test", teamId: TEAM, userGroups: { [LEADS_GROUP]: [GROUP_LEAD] } });
  h = await startHarness({
    env: {
      SLACK_API_URL: slackApi.slackApiUrl,
      TOOL_APPROVALS: JSON.stringify({ create_follow_up: { require: "always", approvers: { roles: ["lead"] } } }),
      SLACK_ROLES: JSON.stringify({ [TEAM]: { groups: { [LEADS_GROUP]: ["lead"] } } }),
    },
    converse: { respond },
  });
});
afterAll(async () => {
  await h?.close();
  await slackApi?.close();
});

/** A mention through the slack function, run by the worker until it waits; returns the Approve button. */
async function waitingThread(ts: string) {
  const before = h.aws.sent.length;
  const body = envelope(appMention({ ts, event_ts: ts, text: "<@U0BOT> make a follow-up" }));
  await h.slack(
    apiEvent({ method: "POST", path: "/slack/events", routeKey: "POST /slack/events", body, headers: signSlackRequest(body) }),
    lambdaContext("test-threadwise-slack", 10_000),
  );
  expect(await h.worker(sqsEvent(sqsRecord(h.aws.sent[before])))).toEqual({ batchItemFailures: [] });
  const post = slackApi.posts.find((p) => p.threadTs === ts && p.blocks);
  const actions = (post?.blocks ?? []).find((b) => (b as { type: string }).type === "actions") as { elements: { action_id: string; value: string }[] };
  const [conversationId, approvalId] = actions.elements[0].value.split(":");
  const edit = actions.elements.find((e) => e.action_id === "threadwise_approval_edit")!;
  return { approve: actions.elements[0], edit, post: post!, conversationId, approvalId };
}

/** An interaction payload through the slack function, signed as Slack signs it. */
async function interact(payload: Record<string, unknown>) {
  const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
  const headers = { ...signSlackRequest(body), "content-type": "application/x-www-form-urlencoded" };
  return h.slack(
    apiEvent({ method: "POST", path: "/slack/interactivity", routeKey: "POST /slack/interactivity", body, headers }),
    lambdaContext("test-threadwise-slack", 10_000),
  );
}

/** A click through the slack function, signed as Slack signs it; returns what it posted to the `response_url`. */
async function click(button: { action_id: string; value: string }, user: string, n: number) {
  const path = `/actions/T0TEST/fn-${n}/secret`;
  const payload = {
    type: "block_actions",
    user: { id: user },
    team: { id: TEAM },
    response_url: `${new URL(slackApi.slackApiUrl).origin}${path}`,
    actions: [{ action_id: button.action_id, value: button.value }],
  };
  const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
  const headers = { ...signSlackRequest(body), "content-type": "application/x-www-form-urlencoded" };
  const result = await h.slack(
    apiEvent({ method: "POST", path: "/slack/interactivity", routeKey: "POST /slack/interactivity", body, headers }),
    lambdaContext("test-threadwise-slack", 10_000),
  );
  return { status: result.statusCode, response: slackApi.responses.find((r) => r.path === path)?.body };
}

const approvalOf = (approvalId: string) => h.database.db.collection("approvals").findOne({ _id: approvalId as never });

describe("functions with tool approvals", () => {
  describe("slack handler on /slack/interactivity", () => {
    it("lets a member of a user group holding the approver role approve, and queues the turn to resume", async () => {
      const { approve, approvalId } = await waitingThread("1700009000.000100");
      const before = h.aws.sent.length;

      const clicked = await click(approve, GROUP_LEAD, 1);

      expect(clicked.status).toBe(200);
      expect(clicked.response?.text).toContain(`approved by <@${GROUP_LEAD}>`);
      expect((await approvalOf(approvalId))?.status).toBe("approved");
      expect(JSON.parse(h.aws.sent[before].body)).toMatchObject({ channel: "slack", resume: expect.any(String) });
    });

    it("tells a user outside the group that they may not decide, and changes nothing", async () => {
      const { approve, approvalId } = await waitingThread("1700009001.000100");
      const before = h.aws.sent.length;

      const clicked = await click(approve, USER, 2);

      expect(clicked.response).toMatchObject({ response_type: "ephemeral", text: "You may not decide this approval." });
      expect((await approvalOf(approvalId))?.status).toBe("pending");
      expect(h.aws.sent.length).toBe(before);
    });
  });

  describe("slack handler editing a call", () => {
    it("opens the modal with the bot token, and its submission edits, queues the turn and updates the message", async () => {
      const { edit, post, approvalId } = await waitingThread("1700009003.000100");
      const message = { type: "message", channel_id: post.channel, message_ts: post.ts };
      const opened = await interact({
        type: "block_actions",
        user: { id: GROUP_LEAD },
        team: { id: TEAM },
        trigger_id: "1.1700009003.abcdef",
        container: message,
        actions: [{ action_id: edit.action_id, value: edit.value }],
      });
      expect(opened.statusCode).toBe(200);
      const view = slackApi.views.at(-1)?.view;
      expect(view).toMatchObject({ type: "modal", callback_id: "threadwise_approval_edit" });
      const before = h.aws.sent.length;

      const typed = JSON.stringify({ title: "Call the new supplier" });
      const submitted = await interact({
        type: "view_submission",
        user: { id: GROUP_LEAD, team_id: TEAM },
        team: { id: TEAM },
        view: { ...view, id: "V1", state: { values: { args: { args: { type: "plain_text_input", value: typed } } } } },
      });

      expect(submitted.statusCode).toBe(200);
      // The webhook carries no Encryption SDK: it records the edit by its hash, and hands the arguments to the worker in the job.
      const edited = { title: "Call the new supplier" };
      const decided = await approvalOf(approvalId);
      expect(decided).toMatchObject({ status: "edited", decision: { kind: "edit", argsHash: argsHash(edited) } });
      expect(decided?.decision.args).toBeUndefined();
      expect(JSON.parse(h.aws.sent[before].body)).toMatchObject({ channel: "slack", resume: expect.any(String), edits: { [approvalId]: edited } });
      expect(slackApi.updates.at(-1)).toMatchObject({ ts: post.ts, blocks: [], text: expect.stringContaining(`edited by <@${GROUP_LEAD}>`) });
    });
  });

  describe("worker handler on the schedule's sweep event", () => {
    it("expires an approval nobody decided, queues its turn, publishes the figures, and the resumed turn tells the thread", async () => {
      const ts = "1700009002.000100";
      const { approvalId } = await waitingThread(ts);
      await h.database.db.collection("approvals").updateOne({ _id: approvalId as never }, { $set: { deadline: new Date(Date.now() - 1000) } });
      const before = h.aws.sent.length;

      let result: unknown;
      const emf = await emfOf(async () => {
        result = await h.worker(APPROVAL_SWEEP_EVENT as never);
      });

      expect(result).toEqual({ expired: 1, resumed: 1, more: false });
      expect(emf).toContainEqual(expect.objectContaining({ ApprovalsExpired: 1, ApprovalTurnsResumed: 1, ApprovalSweepBacklog: 0 }));
      expect((await approvalOf(approvalId))?.status).toBe("expired");
      const resume = h.aws.sent.slice(before);
      expect(resume).toHaveLength(1);
      expect(await h.worker(sqsEvent(sqsRecord(resume[0])))).toEqual({ batchItemFailures: [] });
      expect(slackApi.posts.filter((p) => p.threadTs === ts).at(-1)?.text).toContain("tool said: Not run: nobody approved this call");
      expect(await h.database.db.collection("follow_ups").countDocuments({})).toBe(0);
    });
  });
});
