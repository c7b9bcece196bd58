import { startTestServer, type TestServer } from "../support/api-client.js";
import { startBotConnectorEndpoint, type BotConnectorEndpoint } from "../support/bot-connector-endpoint.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../support/slack-api-endpoint.js";
import { signSlackRequest, TEST_SLACK_SIGNING_SECRET } from "../support/slack-signing.js";
import { startBotFrameworkIssuer, TEST_APP_ID, type BotFrameworkIssuer } from "../support/teams-signing.js";
import { appMention, BOT_USER, CHANNEL, envelope, TEAM } from "../channels/slack/fixtures.js";
import { messageActivity, TENANT, USER_AAD } from "../channels/teams/fixtures.js";

const BOT_TOKEN = "xoxb-local-test-token";
const APP_PASSWORD = "local-test-client-secret";
const FINANCE_GROUP = "9a000000-0000-4000-8000-00000000f1a0";
const ERIN_AAD = "6f0c0000-0000-4000-8000-0000000000e5";
const FOLLOW_UP = 'create_follow_up {"title": "Review the West discounts"}';

let slackApi: SlackApiEndpoint;
let issuer: BotFrameworkIssuer;
let connector: BotConnectorEndpoint;
let t: TestServer;

beforeAll(async () => {
  slackApi = await startSlackApiEndpoint({ botToken: BOT_TOKEN, teamId: TEAM, botUserId: BOT_USER, userGroups: { S0FINANCE: ["U0DAVE"] } });
  issuer = await startBotFrameworkIssuer();
  connector = await startBotConnectorEndpoint({ appId: TEST_APP_ID, appPassword: APP_PASSWORD, groupMembers: { [ERIN_AAD]: [FINANCE_GROUP] } });
  // The offline model calls a tool named in the message when the caller is offered it.
  t = await startTestServer(
    {
      // Contents stored clear: the raw reads below check what was stored (sealing: test/crypto/contents-at-rest.test.ts).
      CONTENT_ENCRYPTION: "off",
      MODEL_PROVIDER: "local",
      SLACK_API_URL: slackApi.slackApiUrl,
      TEAMS_OPENID_METADATA_URL: issuer.openIdMetadataUrl,
      TEAMS_TOKEN_URL: connector.tokenUrl,
      TEAMS_SERVICE_URL_ORIGIN: connector.serviceUrl,
      TEAMS_GRAPH_URL: connector.graphUrl,
      TOOL_ROLES: JSON.stringify({ create_follow_up: ["analyst"] }),
      SLACK_ROLES: JSON.stringify({ [TEAM]: { default: ["viewer"], users: { U0ALICE: ["analyst"] }, groups: { S0FINANCE: ["analyst"] } } }),
      TEAMS_ROLES: JSON.stringify({ [TENANT]: { users: { [USER_AAD]: ["analyst"] }, groups: { [FINANCE_GROUP]: ["analyst"] } } }),
    },
    {
      channels: {
        slack: { signingSecret: TEST_SLACK_SIGNING_SECRET, botToken: BOT_TOKEN },
        teams: { appId: TEST_APP_ID, appPassword: APP_PASSWORD },
      },
    },
  );
});

afterAll(async () => {
  await t?.close();
  await slackApi?.close();
  await connector?.close();
  await issuer?.close();
});

let tsCounter = 0;
async function mention(user: string, text: string): Promise<string> {
  tsCounter += 1;
  const ts = `1700009${String(tsCounter).padStart(3, "0")}.000100`;
  const body = envelope(appMention({ user, ts, event_ts: ts, text: `<@${BOT_USER}> ${text}` }));
  const response = await fetch(`${t.url}/slack/events`, { method: "POST", headers: signSlackRequest(body), body });
  expect(response.status).toBe(200);
  await t.server.turnQueue.drain();
  return ts;
}

async function teamsMessage(from: Record<string, string>, text: string): Promise<string> {
  const activity = messageActivity(connector.serviceUrl, { from, text });
  const token = await issuer.sign({ serviceUrl: connector.serviceUrl });
  const response = await fetch(`${t.url}/teams/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(activity),
  });
  expect(response.status).toBe(202);
  await t.server.turnQueue.drain();
  return activity.id as string;
}

const followUpsBy = (subject: string) => t.db.collection("follow_ups").find({ "createdBy.subject": subject }).toArray();

describe("local server: roles and principals of channel users", () => {
  describe("POST /slack/events", () => {
    it("runs a role-gated tool for a Slack user SLACK_ROLES gives the role, as that Slack principal", async () => {
      const ts = await mention("U0ALICE", FOLLOW_UP);
      expect(await followUpsBy("U0ALICE")).toEqual([
        expect.objectContaining({ title: "Review the West discounts", createdBy: { issuer: "slack", tenant: TEAM, subject: "U0ALICE" } }),
      ]);
      expect(slackApi.posts.find((p) => p.threadTs === ts)?.text).toContain("Review the West discounts");
      // The workspace owns the thread; the turn records whose question it was.
      const turn = await t.db.collection("turns").findOne({ askedBy: { issuer: "slack", tenant: TEAM, subject: "U0ALICE" } });
      expect(turn?.status).toBe("completed");
    });

    it("runs the tool for a member of a Slack user group SLACK_ROLES gives the role", async () => {
      await mention("U0DAVE", FOLLOW_UP);
      expect(await followUpsBy("U0DAVE")).toEqual([expect.objectContaining({ createdBy: { issuer: "slack", tenant: TEAM, subject: "U0DAVE" } })]);
      expect(slackApi.calls.some((c) => c.method === "usergroups.users.list" && c.authorized)).toBe(true);
    });

    it("does not offer the tool to a Slack user with only the workspace's default role", async () => {
      const ts = await mention("U0BOB", FOLLOW_UP);
      expect(await followUpsBy("U0BOB")).toEqual([]);
      expect(slackApi.posts.find((p) => p.threadTs === ts)?.text).toMatch(/^You asked/);
    });

    it("keeps a Slack thread out of reach of API tokens, whatever their subject and tenant say", async () => {
      const ts = await mention("U0ALICE", "a thread only Slack reaches");
      const conversation = await t.db.collection("conversations").findOne({ "channel.key": `slack:${TEAM}:${CHANNEL}:${ts}` });
      expect(conversation?.owner).toEqual({ issuer: "slack", tenant: TEAM, subject: null });
      const id = String(conversation?._id);
      for (const [user, tenant] of [
        [`slack:${TEAM}`, `slack:${TEAM}`],
        ["U0ALICE", TEAM],
        [TEAM, undefined],
      ] as const) {
        const token = await t.token(user, tenant ? { tenant } : {});
        const listed = await t.call("GET", "/v1/conversations", { token });
        expect(listed.body.conversations.map((c: { conversationId: string }) => c.conversationId)).not.toContain(id);
        expect((await t.call("GET", `/v1/conversations/${id}/messages`, { token })).status).toBe(404);
      }
    });
  });

  describe("POST /teams/messages", () => {
    it("runs a role-gated tool for a Teams user TEAMS_ROLES gives the role, as that Teams principal", async () => {
      await teamsMessage({ id: "29:alice", name: "Alice", aadObjectId: USER_AAD }, FOLLOW_UP);
      expect(await followUpsBy(USER_AAD)).toEqual([
        expect.objectContaining({ title: "Review the West discounts", createdBy: { issuer: "teams", tenant: TENANT, subject: USER_AAD } }),
      ]);
    });

    it("runs the tool for a member of an Entra group TEAMS_ROLES gives the role, checked with Microsoft Graph", async () => {
      await teamsMessage({ id: "29:erin", name: "Erin", aadObjectId: ERIN_AAD }, FOLLOW_UP);
      expect(await followUpsBy(ERIN_AAD)).toEqual([expect.objectContaining({ createdBy: { issuer: "teams", tenant: TENANT, subject: ERIN_AAD } })]);
      expect(connector.graphChecks).toContainEqual({ objectId: ERIN_AAD, tenant: TENANT, groupIds: [FINANCE_GROUP] });
    });

    it("does not offer the tool to another user of the tenant", async () => {
      const other = "6f0c0000-0000-4000-8000-0000000000c3";
      const activityId = await teamsMessage({ id: "29:carol", name: "Carol", aadObjectId: other }, FOLLOW_UP);
      expect(await followUpsBy(other)).toEqual([]);
      expect(connector.replies.find((r) => r.activityId === activityId)?.activity.text).toMatch(/^You asked/);
    });
  });
});
