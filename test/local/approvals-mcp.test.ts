import { startTestServer, type TestServer } from "../support/api-client.js";
import { startBotConnectorEndpoint, type BotConnectorEndpoint } from "../support/bot-connector-endpoint.js";
import { startHostileServer } from "../support/mcp-servers.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../support/slack-api-endpoint.js";
import { signSlackRequest, TEST_SLACK_SIGNING_SECRET } from "../support/slack-signing.js";
import { startBotFrameworkIssuer, TEST_APP_ID, type BotFrameworkIssuer } from "../support/teams-signing.js";
import { appMention, BOT_USER, envelope, TEAM, USER } from "../channels/slack/fixtures.js";
import { messageActivity, USER_AAD } from "../channels/teams/fixtures.js";

/**
 * An MCP tool without annotations (the hostile server's `write_record`, which counts its effects)
 * waits for approval in Slack and in Teams as a built-in tool does: the local server with both
 * channels, the MCP server over Streamable HTTP, requests signed as Slack and the Bot Framework sign them.
 */

const BOT_TOKEN = "xoxb-local-test-token";
const APP_PASSWORD = "local-test-client-secret";
const TOOL = "records__write_record";

let mcp: Awaited<ReturnType<typeof startHostileServer>>;
let slackApi: SlackApiEndpoint;
let issuer: BotFrameworkIssuer;
let connector: BotConnectorEndpoint;
let t: TestServer;

beforeAll(async () => {
  [mcp, slackApi, issuer, connector] = await Promise.all([
    startHostileServer(),
    startSlackApiEndpoint({ botToken: BOT_TOKEN, teamId: TEAM, botUserId: BOT_USER }),
    startBotFrameworkIssuer(),
    startBotConnectorEndpoint({ appId: TEST_APP_ID, appPassword: APP_PASSWORD }),
  ]);
  t = await startTestServer(
    {
      MCP_SERVERS: JSON.stringify([{ name: "records", transport: { kind: "streamable-http", url: mcp.url }, tools: ["write_record"] }]),
      SLACK_API_URL: slackApi.slackApiUrl,
      TEAMS_OPENID_METADATA_URL: issuer.openIdMetadataUrl,
      TEAMS_TOKEN_URL: connector.tokenUrl,
      TEAMS_SERVICE_URL_ORIGIN: connector.serviceUrl,
    },
    { channels: { slack: { signingSecret: TEST_SLACK_SIGNING_SECRET, botToken: BOT_TOKEN }, teams: { appId: TEST_APP_ID, appPassword: APP_PASSWORD } } },
  );
});

afterAll(async () => {
  await t?.close();
  await Promise.all([mcp?.stop(), slackApi?.close(), connector?.close(), issuer?.close()]);
});

const approvalStatus = async (approvalId: string) => (await t.db.collection("approvals").findOne({ _id: approvalId as never }))?.status;

describe("local server: an approval on an MCP tool", () => {
  describe("from Slack", () => {
    type Button = { action_id: string; value: string };
    let clicks = 0;

    /** A click as Slack posts it to the interactivity URL: form-encoded `payload`, signed with the signing secret. */
    async function click(button: Button) {
      clicks += 1;
      const path = `/actions/${TEAM}/mcp${clicks}/secret`;
      const payload = {
        type: "block_actions",
        user: { id: USER, team_id: TEAM },
        team: { id: TEAM },
        api_app_id: "A0APP",
        trigger_id: `${clicks}.1700000000.${"ef".repeat(8)}`,
        response_url: `${new URL(slackApi.slackApiUrl).origin}${path}`,
        actions: [{ action_id: button.action_id, block_id: "b", value: button.value, type: "button", action_ts: "1700000000.1" }],
      };
      const body = new URLSearchParams({ payload: JSON.stringify(payload) }).toString();
      const response = await fetch(`${t.url}/slack/interactivity`, {
        method: "POST",
        headers: { ...signSlackRequest(body), "content-type": "application/x-www-form-urlencoded" },
        body,
      });
      await t.server.turnQueue.drain();
      return { status: response.status, response: slackApi.responses.find((r) => r.path === path)?.body };
    }

    it("posts Approve and Reject buttons, runs the MCP tool once on Approve, and a second click runs nothing", async () => {
      const ts = "1700009001.000100";
      const before = mcp.counters.writes;
      const body = envelope(appMention({ ts, event_ts: ts, text: `<@${BOT_USER}> ${TOOL} {"note": "from slack"}` }));
      expect((await fetch(`${t.url}/slack/events`, { method: "POST", headers: signSlackRequest(body), body })).status).toBe(200);
      await t.server.turnQueue.drain();

      const post = slackApi.posts.find((p) => p.threadTs === ts && p.blocks);
      expect(post?.text).toBe(`Waiting for approval: ${TOOL}`);
      const actions = (post?.blocks ?? []).find((b) => (b as { type: string }).type === "actions") as { elements: Button[] } | undefined;
      const button = (id: string) => actions?.elements.find((e) => e.action_id === id) as Button;
      const [approve, reject] = [button("threadwise_approval_approve"), button("threadwise_approval_reject")];
      const approvalId = approve.value.split(":")[1];
      expect(mcp.counters.writes).toBe(before);

      const approved = await click(approve);
      expect(approved.status).toBe(200);
      expect(approved.response?.text).toContain(`approved by <@${USER}>`);
      expect(await approvalStatus(approvalId)).toBe("approved");
      expect(mcp.counters.writes).toBe(before + 1);
      expect(slackApi.posts.filter((p) => p.threadTs === ts).at(-1)?.text).toContain("wrote from slack");

      const again = await click(reject);
      expect(again.response?.text).toBe("This call was already decided (approved).");
      expect(await approvalStatus(approvalId)).toBe("approved");
      expect(mcp.counters.writes).toBe(before + 1);
    });
  });

  describe("from Teams", () => {
    type Action = { verb: string; data: { conversationId: string; approvalId: string } };

    async function post(activity: Record<string, unknown>) {
      const authorization = `Bearer ${await issuer.sign({ serviceUrl: activity.serviceUrl as string })}`;
      const response = await fetch(`${t.url}/teams/messages`, {
        method: "POST",
        headers: { "content-type": "application/json", authorization },
        body: JSON.stringify(activity),
      });
      return { status: response.status, body: await response.json().catch(() => undefined) };
    }

    /** An `Action.Execute` click as Teams sends it: an `adaptiveCard/action` invoke, signed by the Bot Framework. */
    const invoke = (action: Action) => ({
      ...messageActivity(connector.serviceUrl, { from: { id: "29:clicker", name: "Clicker", aadObjectId: USER_AAD } }),
      type: "invoke",
      name: "adaptiveCard/action",
      text: undefined,
      value: { action: { type: "Action.Execute", verb: action.verb, data: action.data } },
    });

    it("replies with an Adaptive Card, runs the MCP tool once on its Approve invoke, and a second invoke runs nothing", async () => {
      const before = mcp.counters.writes;
      const activity = messageActivity(connector.serviceUrl, { text: `${TOOL} {"note": "from teams"}` });
      expect((await post(activity)).status).toBe(202);
      await t.server.turnQueue.drain();

      const reply = connector.replies.find((r) => r.activityId === activity.id && Array.isArray(r.activity.attachments));
      const card = (reply?.activity.attachments as { contentType: string; content: { actions: Action[] } }[] | undefined)?.[0];
      expect(card?.contentType).toBe("application/vnd.microsoft.card.adaptive");
      const action = (verb: string) => card?.content.actions.find((a) => a.verb === verb) as Action;
      const [approve, reject] = [action("threadwise.approval.approve"), action("threadwise.approval.reject")];
      expect(mcp.counters.writes).toBe(before);

      const approved = await post(invoke(approve));
      expect(approved.status).toBe(200);
      expect(approved.body.value.body[0].text).toContain(`approved by ${USER_AAD}`);
      await t.server.turnQueue.drain();
      expect(await approvalStatus(approve.data.approvalId)).toBe("approved");
      expect(mcp.counters.writes).toBe(before + 1);
      expect(connector.replies.filter((r) => r.activityId === activity.id).at(-1)?.activity.text).toContain("wrote from teams");

      const again = await post(invoke(reject));
      expect(again.body.value.body[0].text).toBe("This call was already decided (approved).");
      await t.server.turnQueue.drain();
      expect(await approvalStatus(approve.data.approvalId)).toBe("approved");
      expect(mcp.counters.writes).toBe(before + 1);
    });
  });
});
