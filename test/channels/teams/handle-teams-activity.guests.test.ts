import { vi } from "vitest";
import { startTestServer, type TestServer } from "../../support/api-client.js";
import { startBotConnectorEndpoint, type BotConnectorEndpoint } from "../../support/bot-connector-endpoint.js";
import { startBotFrameworkIssuer, TEST_APP_ID, type BotFrameworkIssuer } from "../../support/teams-signing.js";
import { messageActivity, TENANT } from "./fixtures.js";

/**
 * Teams guests (issue 31): a B2B guest has an object id in the host's directory and arrives with
 * the host's tenant id, exactly as a member does; only the directory (Graph's `userType`) tells
 * them apart. Requests are signed as the Bot Framework signs them; Entra's token endpoint, Graph
 * and the Bot Connector are the local stand-in.
 */

const APP_PASSWORD = "guest-test-client-secret";
const MEMBER_AAD = "6f0c0000-0000-4000-8000-00000000d0a1";
const SECOND_MEMBER_AAD = "6f0c0000-0000-4000-8000-00000000d0a2";
const UNCHECKED_MEMBER_AAD = "6f0c0000-0000-4000-8000-00000000d0a3";
const GUEST_AAD = "6f0c0000-0000-4000-8000-00000000d0e5";
const SQL = 'sql_query {"sql": "SELECT 41 + 1 AS answer"}';
const FOLLOW_UP = 'create_follow_up {"title": "Call the supplier"}';

let issuer: BotFrameworkIssuer;
let connector: BotConnectorEndpoint;
let t: TestServer;

beforeAll(async () => {
  issuer = await startBotFrameworkIssuer();
  connector = await startBotConnectorEndpoint({ appId: TEST_APP_ID, appPassword: APP_PASSWORD, userTypes: { [GUEST_AAD]: "Guest" } });
  // The offline model calls a tool named in the message when the caller is offered it.
  t = await startTestServer(
    {
      MODEL_PROVIDER: "local",
      TEAMS_OPENID_METADATA_URL: issuer.openIdMetadataUrl,
      TEAMS_TOKEN_URL: connector.tokenUrl,
      TEAMS_SERVICE_URL_ORIGIN: connector.serviceUrl,
      TEAMS_GRAPH_URL: connector.graphUrl,
      TOOL_ROLES: JSON.stringify({ sql_query: ["analyst"] }),
      TOOL_APPROVALS: JSON.stringify({ create_follow_up: { require: "always", approvers: { roles: ["approver"] } } }),
      TEAMS_ROLES: JSON.stringify({ [TENANT]: { default: ["analyst", "approver"], guest: ["viewer"] } }),
    },
    { channels: { teams: { appId: TEST_APP_ID, appPassword: APP_PASSWORD } } },
  );
});

afterAll(async () => {
  await t?.close();
  await connector?.close();
  await issuer?.close();
});

async function post(activity: Record<string, unknown>) {
  const token = await issuer.sign({ serviceUrl: connector.serviceUrl });
  const response = await fetch(`${t.url}/teams/messages`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: `Bearer ${token}` },
    body: JSON.stringify(activity),
  });
  return { status: response.status, body: await response.json().catch(() => undefined) };
}

/** A message from a user of the host tenant (a member or a guest: Teams sends both alike); returns the activity once the worker answered. */
async function say(aadObjectId: string, text: string) {
  const activity = messageActivity(connector.serviceUrl, { from: { id: `29:${aadObjectId}`, name: "Someone", aadObjectId }, text });
  expect((await post(activity)).status).toBe(202);
  await t.server.turnQueue.drain();
  const replies = connector.replies.filter((r) => r.activityId === activity.id);
  return { activity, replies, text: replies.map((r) => String(r.activity.text ?? "")).join("\n") };
}

/** What the offline model answers after it ran the query: the tool's result, "answer" column included. */
const RAN = /sql_query returned:[\s\S]*answer[\s\S]*42/;

const readsOf = (objectId: string) => connector.userTypeReads.filter((r) => r.objectId === objectId);

type Action = { verb: string; data: { conversationId: string; approvalId: string } };

/** The approve button of the card a waiting call's reply carries. */
function approveButton(replies: { activity: Record<string, unknown> }[]): Action {
  const card = replies.flatMap((r) => (r.activity.attachments as { content: { actions: Action[] } }[] | undefined) ?? [])[0];
  return card.content.actions.find((a) => a.verb === "threadwise.approval.approve") as Action;
}

function click(action: Action, aadObjectId: string) {
  return {
    ...messageActivity(connector.serviceUrl, { from: { id: `29:${aadObjectId}`, name: "Clicker", aadObjectId } }),
    type: "invoke",
    name: "adaptiveCard/action",
    text: undefined,
    value: { action: { type: "Action.Execute", verb: action.verb, data: action.data } },
  };
}

const approvalStatus = async (approvalId: string) => (await t.db.collection("approvals").findOne({ _id: approvalId as never }))?.status;

describe("channels/teams: guests of the host tenant", () => {
  describe("POST /teams/messages", () => {
    it("gives a member the tenant's default roles, so a tool that requires analyst runs, after one userType read", async () => {
      const { text } = await say(MEMBER_AAD, SQL);
      expect(text).toMatch(RAN);
      expect(readsOf(MEMBER_AAD)).toEqual([{ objectId: MEMBER_AAD, tenant: TENANT, select: "userType" }]);
    });

    it("gives a guest only the guest roles: sql_query, which requires analyst, is not offered", async () => {
      const { text } = await say(GUEST_AAD, SQL);
      expect(text).toMatch(/^You asked/);
      expect(text).not.toMatch(RAN);
      expect(readsOf(GUEST_AAD)).toHaveLength(1);
    });

    it("fails closed when Graph does not answer the guest check: no host defaults, and a log line without ids", async () => {
      const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
      try {
        connector.failNextUserRead(403);
        const { text } = await say(UNCHECKED_MEMBER_AAD, SQL);
        expect(text).toMatch(/^You asked/);
        expect(text).not.toMatch(RAN);
        const lines = warn.mock.calls.map(([line]) => String(line)).filter((line) => line.includes("teams guest check failed"));
        expect(lines.map((line) => JSON.parse(line))).toEqual([
          {
            level: "warn",
            message: "teams guest check failed, no host roles",
            channel: "teams",
            reason: "lookup_failed",
            error: "RoleLookupError",
            detail: "microsoft graph answered 403 to a user's userType",
          },
        ]);
        expect(lines.join("\n")).not.toContain(UNCHECKED_MEMBER_AAD);
      } finally {
        warn.mockRestore();
      }
      // A failure is not cached: the next turn asks again, and the member gets their roles back.
      expect((await say(UNCHECKED_MEMBER_AAD, SQL)).text).toMatch(RAN);
      expect(readsOf(UNCHECKED_MEMBER_AAD)).toHaveLength(2);
    });

    it("reads a user's userType once per cache period, however many turns they take", async () => {
      for (let i = 0; i < 3; i += 1) expect((await say(SECOND_MEMBER_AAD, SQL)).text).toMatch(RAN);
      expect(readsOf(SECOND_MEMBER_AAD)).toHaveLength(1);
    });
  });

  describe("POST /teams/messages with an adaptiveCard/action invoke", () => {
    it("tells a guest they may not decide a waiting call, and a member with the default approver role decides it", async () => {
      const { replies } = await say(MEMBER_AAD, FOLLOW_UP);
      const approve = approveButton(replies);
      const refused = await post(click(approve, GUEST_AAD));
      expect(refused.body).toEqual({ statusCode: 200, type: "application/vnd.microsoft.activity.message", value: "You may not decide this approval." });
      expect(await approvalStatus(approve.data.approvalId)).toBe("pending");
      const approved = await post(click(approve, SECOND_MEMBER_AAD));
      expect(approved.body.value.body[0].text).toContain(`approved by ${SECOND_MEMBER_AAD}`);
      expect(await approvalStatus(approve.data.approvalId)).toBe("approved");
    });
  });
});
