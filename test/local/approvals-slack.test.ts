import { startTestServer, type TestServer } from "../support/api-client.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../support/slack-api-endpoint.js";
import { signSlackRequest, TEST_SLACK_SIGNING_SECRET } from "../support/slack-signing.js";
import { appMention, BOT_USER, CHANNEL, envelope, TEAM, USER } from "../channels/slack/fixtures.js";

const BOT_TOKEN = "xoxb-local-test-token";
const LEAD = "U0LEAD";
/** A member of the leads' user group, whose role comes from the group alone. */
const GROUP_LEAD = "U0GROUPLEAD";
const LEADS_GROUP = "S0LEADS";
const POLICY = { create_follow_up: { require: "always", approvers: { requester: true, roles: ["lead"] } } };

let slackApi: SlackApiEndpoint;
let t: TestServer;

beforeAll(async () => {
  slackApi = await startSlackApiEndpoint({ botToken: BOT_TOKEN, teamId: TEAM, botUserId: BOT_USER, userGroups: { [LEADS_GROUP]: [GROUP_LEAD] } });
  t = await startTestServer(
    {
      // Contents stored clear: the raw reads below check what was stored (sealing: test/crypto/contents-at-rest.test.ts).
      CONTENT_ENCRYPTION: "off",
      SLACK_API_URL: slackApi.slackApiUrl,
      TOOL_APPROVALS: JSON.stringify(POLICY),
      SLACK_ROLES: JSON.stringify({ [TEAM]: { users: { [LEAD]: ["lead"] }, groups: { [LEADS_GROUP]: ["lead"] } } }),
    },
    { channels: { slack: { signingSecret: TEST_SLACK_SIGNING_SECRET, botToken: BOT_TOKEN } } },
  );
});

afterAll(async () => {
  await t?.close();
  await slackApi?.close();
});

let tsCounter = 0;
function nextTs(): string {
  tsCounter += 1;
  return `1700002${String(tsCounter).padStart(3, "0")}.000100`;
}

type Button = { action_id: string; value: string };

/** A mention asking for a follow-up; returns the approval message's buttons once the worker posted it. */
async function waitingThread(title = "Call the supplier") {
  const ts = nextTs();
  const body = envelope(appMention({ ts, event_ts: ts, text: `<@${BOT_USER}> create_follow_up {"title": "${title}"}` }));
  const sent = await fetch(`${t.url}/slack/events`, { method: "POST", headers: signSlackRequest(body), body });
  expect(sent.status).toBe(200);
  await t.server.turnQueue.drain();
  const post = slackApi.posts.find((p) => p.threadTs === ts && p.blocks);
  const actions = (post?.blocks ?? []).find((b) => (b as { type: string }).type === "actions") as { elements: Button[] } | undefined;
  const button = (id: string) => (actions?.elements ?? []).find((e) => e.action_id === id) as Button;
  const [approve, edit, reject] = [button("threadwise_approval_approve"), button("threadwise_approval_edit"), button("threadwise_approval_reject")];
  const [conversationId, approvalId] = (approve?.value ?? ":").split(":");
  return { ts, post, approve, edit, reject, conversationId, approvalId };
}

let responseCounter = 0;
/** Posts an interaction payload as Slack does: form-encoded `payload`, signed like an event. */
async function interact(payload: Record<string, unknown>, sign = true) {
  const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
  const headers: Record<string, string> = { ...signSlackRequest(body), "content-type": "application/x-www-form-urlencoded" };
  if (!sign) headers["x-slack-signature"] = `v0=${"0".repeat(64)}`;
  const response = await fetch(`${t.url}/slack/interactivity`, { method: "POST", headers, body });
  const text = await response.text();
  await t.server.turnQueue.drain();
  return { status: response.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : undefined };
}

/** A click as Slack posts it, on the approval message `message` (channel and ts) when given. */
async function click(button: Button, user: string, options: { team?: string; sign?: boolean; message?: { channel: string; ts: string } } = {}) {
  responseCounter += 1;
  const path = `/actions/T0TEST/${responseCounter}/secret`;
  const payload = {
    type: "block_actions",
    user: { id: user, team_id: options.team ?? TEAM },
    team: { id: options.team ?? TEAM },
    api_app_id: "A0APP",
    trigger_id: `${responseCounter}.1700000000.${"ab".repeat(8)}`,
    ...(options.message && { container: { type: "message", channel_id: options.message.channel, message_ts: options.message.ts, is_ephemeral: false } }),
    response_url: `${new URL(slackApi.slackApiUrl).origin}${path}`,
    actions: [{ action_id: button.action_id, block_id: "b", value: button.value, type: "button", action_ts: "1700000000.1" }],
  };
  const { status } = await interact(payload, options.sign !== false);
  return { status, response: slackApi.responses.find((r) => r.path === path)?.body };
}

/** The edit modal submitted as Slack posts a `view_submission`: the view as opened, its input's value as typed. */
async function submit(view: Record<string, unknown>, user: string, typed: string) {
  const payload = {
    type: "view_submission",
    team: { id: TEAM, domain: "test" },
    user: { id: user, username: user, name: user, team_id: TEAM },
    api_app_id: "A0APP",
    trigger_id: "9.1700000000.cd",
    view: { ...view, id: "V1", team_id: TEAM, state: { values: { args: { args: { type: "plain_text_input", value: typed } } } }, hash: "1.a" },
    response_urls: [],
    is_enterprise_install: false,
  };
  return interact(payload);
}

const approvalStatus = async (approvalId: string) => (await t.db.collection("approvals").findOne({ _id: approvalId as never }))?.status;
const followUps = (conversationId: string) => t.db.collection("follow_ups").countDocuments({ conversationId });

describe("local server: approvals in Slack", () => {
  describe("a mention that calls a held tool", () => {
    it("posts Approve and Reject buttons in the thread and creates nothing", async () => {
      const { post, approve, reject, conversationId } = await waitingThread();
      expect(post).toMatchObject({ channel: CHANNEL, text: "Waiting for approval: create_follow_up" });
      expect(approve.action_id).toBe("threadwise_approval_approve");
      expect(reject.action_id).toBe("threadwise_approval_reject");
      expect(await followUps(conversationId)).toBe(0);
    });
  });

  describe("POST /slack/interactivity", () => {
    it("decides as the requester, updates the message with who decided, and answers in the thread after one follow-up", async () => {
      const { ts, approve, conversationId, approvalId } = await waitingThread();
      const clicked = await click(approve, USER);
      expect(clicked.status).toBe(200);
      expect(clicked.response).toMatchObject({ replace_original: true });
      expect(clicked.response?.text).toContain(`approved by <@${USER}>`);
      expect(await approvalStatus(approvalId)).toBe("approved");
      expect(await followUps(conversationId)).toBe(1);
      expect(slackApi.posts.filter((p) => p.threadTs === ts).at(-1)?.text).toContain("Recorded follow-up");
    });

    it("lets a user with the approver role reject, and the answer says nothing was created", async () => {
      const { ts, reject, conversationId, approvalId } = await waitingThread();
      const clicked = await click(reject, LEAD);
      expect(clicked.response?.text).toContain(`rejected by <@${LEAD}>`);
      expect(await approvalStatus(approvalId)).toBe("rejected");
      expect(await followUps(conversationId)).toBe(0);
      expect(slackApi.posts.filter((p) => p.threadTs === ts).at(-1)?.text).toContain("rejected this call");
    });

    it("lets a member of a user group holding the approver role approve, as a turn would give them the role", async () => {
      const { approve, approvalId, conversationId } = await waitingThread();
      const clicked = await click(approve, GROUP_LEAD);
      expect(clicked.response?.text).toContain(`approved by <@${GROUP_LEAD}>`);
      expect(await approvalStatus(approvalId)).toBe("approved");
      expect(await followUps(conversationId)).toBe(1);
    });

    it("tells only a user without the role that they may not decide, and changes nothing", async () => {
      const { approve, approvalId } = await waitingThread();
      const clicked = await click(approve, "U0BOB");
      expect(clicked.status).toBe(200);
      expect(clicked.response).toMatchObject({ response_type: "ephemeral", replace_original: false, text: "You may not decide this approval." });
      expect(await approvalStatus(approvalId)).toBe("pending");
    });

    it("refuses a user of another workspace as if the approval did not exist", async () => {
      const { approve, approvalId } = await waitingThread();
      const clicked = await click(approve, USER, { team: "T0OTHER" });
      expect(clicked.response).toMatchObject({ response_type: "ephemeral", text: "This approval no longer exists." });
      expect(await approvalStatus(approvalId)).toBe("pending");
    });

    it("answers a second click with the first decision, and a conflicting one with the status", async () => {
      const { approve, reject, conversationId } = await waitingThread();
      await click(approve, USER);
      expect((await click(approve, USER)).response?.text).toContain("approved");
      expect((await click(reject, LEAD)).response?.text).toBe("This call was already decided (approved).");
      expect(await followUps(conversationId)).toBe(1);
    });

    it("returns 401 for a request not signed with the signing secret, and decides nothing", async () => {
      const { approve, approvalId } = await waitingThread();
      expect((await click(approve, USER, { sign: false })).status).toBe(401);
      expect(await approvalStatus(approvalId)).toBe("pending");
    });
  });

  describe("editing from Slack", () => {
    /** Clicks Edit on a fresh waiting call; returns the modal Slack was asked to open. */
    async function openEditor(user = USER) {
      const thread = await waitingThread();
      const before = slackApi.views.length;
      const clicked = await click(thread.edit, user, { message: { channel: CHANNEL, ts: thread.post!.ts } });
      return { ...thread, clicked, view: slackApi.views.slice(before).at(0)?.view };
    }

    it("opens a modal with views.open, prefilled with the arguments as JSON, and decides nothing", async () => {
      const { clicked, view, approvalId } = await openEditor();
      expect(clicked.status).toBe(200);
      const input = ((view?.blocks ?? []) as { type: string; element?: { initial_value?: string } }[]).find((b) => b.type === "input");
      expect(JSON.parse(input?.element?.initial_value ?? "")).toEqual({ title: "Call the supplier" });
      expect(view).toMatchObject({ type: "modal", callback_id: "threadwise_approval_edit" });
      expect(await approvalStatus(approvalId)).toBe("pending");
    });

    it("answers a submission that is not JSON with response_action errors under the input, and decides nothing", async () => {
      const { view, approvalId } = await openEditor();
      const submitted = await submit(view!, USER, "{title: nope");
      expect(submitted.body).toEqual({ response_action: "errors", errors: { args: "Not JSON: write the arguments as a JSON object." } });
      expect(await approvalStatus(approvalId)).toBe("pending");
    });

    it("answers arguments the tool's schema refuses with errors naming the field, and decides nothing", async () => {
      const { view, approvalId } = await openEditor();
      const submitted = await submit(view!, USER, JSON.stringify({ title: "x", dueDate: "tomorrow" }));
      expect(submitted.body?.response_action).toBe("errors");
      expect((submitted.body?.errors as { args?: string } | undefined)?.args).toMatch(/^title: .*; dueDate: Invalid ISO date$/);
      expect(await approvalStatus(approvalId)).toBe("pending");
    });

    it("runs the call with the edited arguments once, closes the modal and updates the message naming who edited", async () => {
      const { view, approvalId, conversationId, post, ts } = await openEditor(LEAD);
      const submitted = await submit(view!, LEAD, JSON.stringify({ title: "Call the new supplier" }));
      expect(submitted).toEqual({ status: 200, body: undefined });
      expect(await approvalStatus(approvalId)).toBe("edited");
      const created = await t.db.collection("follow_ups").find({ conversationId }).toArray();
      expect(created.map((f) => f.title)).toEqual(["Call the new supplier"]);
      const update = slackApi.updates.find((u) => u.ts === post!.ts);
      expect(update).toMatchObject({ channel: CHANNEL, blocks: [] });
      expect(update?.text).toContain(`create_follow_up: edited by <@${LEAD}>`);
      expect(slackApi.posts.filter((p) => p.threadTs === ts).at(-1)?.text).toContain("Recorded follow-up");
    });

    it("gives a user without the approver role only a note, and opens no modal", async () => {
      const { clicked, view, approvalId } = await openEditor("U0BOB");
      expect(view).toBeUndefined();
      expect(clicked.response).toMatchObject({ response_type: "ephemeral", text: "You may not decide this approval." });
      expect(await approvalStatus(approvalId)).toBe("pending");
    });

    it("answers Edit on a call already decided with the decision, and opens no modal", async () => {
      const thread = await waitingThread();
      await click(thread.approve, USER);
      const before = slackApi.views.length;
      const clicked = await click(thread.edit, USER, { message: { channel: CHANNEL, ts: thread.post!.ts } });
      expect(slackApi.views.length).toBe(before);
      expect(clicked.response).toMatchObject({ replace_original: true, text: "This call was already decided (approved)." });
    });

    it("answers a submission after another decision with the conflict under the input", async () => {
      const { view, approve, approvalId } = await openEditor();
      await click(approve, LEAD);
      const submitted = await submit(view!, USER, JSON.stringify({ title: "Too late now" }));
      expect(submitted.body).toEqual({ response_action: "errors", errors: { args: "This call was already decided (approved)." } });
      expect(await approvalStatus(approvalId)).toBe("approved");
    });
  });
});
