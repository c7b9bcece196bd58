import { startTestServer, type TestServer } from "../support/api-client.js";
import { startBotConnectorEndpoint, type BotConnectorEndpoint } from "../support/bot-connector-endpoint.js";
import { startBotFrameworkIssuer, TEST_APP_ID, type BotFrameworkIssuer } from "../support/teams-signing.js";
import { messageActivity, TENANT, USER_AAD } from "../channels/teams/fixtures.js";

const APP_PASSWORD = "local-test-client-secret";
const LEAD_AAD = "6f0c0000-0000-4000-8000-0000000000c3";
const POLICY = { create_follow_up: { require: "always", approvers: { requester: true, roles: ["lead"] } } };

let issuer: BotFrameworkIssuer;
let connector: BotConnectorEndpoint;
let t: TestServer;

beforeAll(async () => {
  issuer = await startBotFrameworkIssuer();
  connector = await startBotConnectorEndpoint({ appId: TEST_APP_ID, appPassword: APP_PASSWORD });
  t = await startTestServer(
    {
      // Contents stored clear: the raw reads below check what was stored (sealing: test/crypto/contents-at-rest.test.ts).
      CONTENT_ENCRYPTION: "off",
      TEAMS_OPENID_METADATA_URL: issuer.openIdMetadataUrl,
      TEAMS_TOKEN_URL: connector.tokenUrl,
      TEAMS_SERVICE_URL_ORIGIN: connector.serviceUrl,
      TOOL_APPROVALS: JSON.stringify(POLICY),
      TEAMS_ROLES: JSON.stringify({ [TENANT]: { users: { [LEAD_AAD]: ["lead"] } } }),
    },
    { channels: { teams: { appId: TEST_APP_ID, appPassword: APP_PASSWORD } } },
  );
});

afterAll(async () => {
  await t?.close();
  await connector?.close();
  await issuer?.close();
});

async function post(activity: Record<string, unknown>, sign = true) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (sign) headers.authorization = `Bearer ${await issuer.sign({ serviceUrl: activity.serviceUrl as string })}`;
  const response = await fetch(`${t.url}/teams/messages`, { method: "POST", headers, body: JSON.stringify(activity) });
  return { status: response.status, body: await response.json().catch(() => undefined) };
}

type Action = { verb: string; data: { conversationId: string; approvalId: string; args?: string } };
type Card = { body: { type: string; id?: string; value?: string; text?: string; color?: string }[]; actions: Action[] };

/** A message asking for a follow-up; returns the card's actions once the worker posted it. */
async function waitingChat() {
  const activity = messageActivity(connector.serviceUrl, { text: 'create_follow_up {"title": "Call the supplier"}' });
  expect((await post(activity)).status).toBe(202);
  await t.server.turnQueue.drain();
  const reply = connector.replies.find((r) => r.activityId === activity.id && Array.isArray(r.activity.attachments));
  const card = (reply?.activity.attachments as { contentType: string; content: Card }[] | undefined)?.[0];
  const action = (verb: string) => card?.content.actions.find((a) => a.verb === verb) as Action;
  const [approve, edit, reject] = [action("threadwise.approval.approve"), action("threadwise.approval.edit"), action("threadwise.approval.reject")];
  return { activity, reply, card, approve, edit, reject, conversationId: approve?.data.conversationId ?? "", approvalId: approve?.data.approvalId ?? "" };
}

/** An `Action.Execute` click as Teams sends it: an `adaptiveCard/action` invoke, signed by the Bot Framework. */
function invoke(action: Action, aadObjectId: string, overrides: Record<string, unknown> = {}) {
  return {
    ...messageActivity(connector.serviceUrl, { from: { id: "29:clicker", name: "Clicker", aadObjectId } }),
    type: "invoke",
    name: "adaptiveCard/action",
    text: undefined,
    value: { action: { type: "Action.Execute", verb: action.verb, data: action.data } },
    ...overrides,
  };
}

const approvalStatus = async (approvalId: string) => (await t.db.collection("approvals").findOne({ _id: approvalId as never }))?.status;
/** Follow-ups of the approval's turn: every test's chat is the same personal conversation. */
const followUps = async (approvalId: string) => {
  const approval = await t.db.collection("approvals").findOne({ _id: approvalId as never });
  return t.db.collection("follow_ups").countDocuments({ turnId: approval?.turnId });
};

describe("local server: approvals in Teams", () => {
  describe("a message that calls a held tool", () => {
    it("replies with an Adaptive Card whose Action.Execute buttons name the approval, and creates nothing", async () => {
      const { card, approve, reject, approvalId } = await waitingChat();
      expect(card?.contentType).toBe("application/vnd.microsoft.card.adaptive");
      expect(approve.verb).toBe("threadwise.approval.approve");
      expect(reject.verb).toBe("threadwise.approval.reject");
      expect(await followUps(approvalId)).toBe(0);
    });
  });

  describe("POST /teams/messages with an adaptiveCard/action invoke", () => {
    it("decides as the requester, refreshes the card with who decided, and the turn answers after one follow-up", async () => {
      const { activity, approve, approvalId } = await waitingChat();
      const answered = await post(invoke(approve, USER_AAD));
      expect(answered.status).toBe(200);
      expect(answered.body).toMatchObject({ statusCode: 200, type: "application/vnd.microsoft.card.adaptive" });
      expect(answered.body.value.body[0].text).toContain(`approved by ${USER_AAD}`);
      await t.server.turnQueue.drain();
      expect(await approvalStatus(approvalId)).toBe("approved");
      expect(await followUps(approvalId)).toBe(1);
      const last = connector.replies.filter((r) => r.activityId === activity.id).at(-1);
      expect(last?.activity.text).toContain("Recorded follow-up");
    });

    it("lets a user with the approver role reject, and nothing is created", async () => {
      const { reject, approvalId } = await waitingChat();
      const answered = await post(invoke(reject, LEAD_AAD));
      expect(answered.body.value.body[0].text).toContain(`rejected by ${LEAD_AAD}`);
      await t.server.turnQueue.drain();
      expect(await approvalStatus(approvalId)).toBe("rejected");
      expect(await followUps(approvalId)).toBe(0);
    });

    it("tells a user without the role that they may not decide, and keeps the card", async () => {
      const { approve, approvalId } = await waitingChat();
      const answered = await post(invoke(approve, "6f0c0000-0000-4000-8000-0000000000ff"));
      expect(answered.body).toEqual({ statusCode: 200, type: "application/vnd.microsoft.activity.message", value: "You may not decide this approval." });
      expect(await approvalStatus(approvalId)).toBe("pending");
    });

    it("answers a user of another tenant as if the approval did not exist", async () => {
      const { approve, approvalId } = await waitingChat();
      const other = "72f988bf-0000-4000-8000-00000000bb02";
      const answered = await post(
        invoke(approve, USER_AAD, { channelData: { tenant: { id: other } }, conversation: { conversationType: "personal", tenantId: other, id: "a:1" } }),
      );
      expect(answered.body.value).toBe("This approval no longer exists.");
      expect(await approvalStatus(approvalId)).toBe("pending");
    });

    it("refreshes a second click with the first decision's status", async () => {
      const { approve, reject, approvalId } = await waitingChat();
      await post(invoke(approve, USER_AAD));
      const again = await post(invoke(reject, LEAD_AAD));
      expect(again.body.value.body[0].text).toBe("This call was already decided (approved).");
      await t.server.turnQueue.drain();
      expect(await followUps(approvalId)).toBe(1);
    });

    it("returns 401 for an invoke without the Bot Framework's token, and decides nothing", async () => {
      const { approve, approvalId } = await waitingChat();
      expect((await post(invoke(approve, USER_AAD), false)).status).toBe(401);
      expect(await approvalStatus(approvalId)).toBe("pending");
    });
  });

  describe("editing from Teams", () => {
    /** Action.Execute gathers the card's inputs into its data: the arguments box as typed. */
    const editWith = (edit: Action, typed: string): Action => ({ ...edit, data: { ...edit.data, args: typed } });
    const refreshed = (body: { value?: Card }) => body.value as Card;

    it("shows the arguments in an Input.Text beside an Edit button", async () => {
      const { card, edit } = await waitingChat();
      const input = card?.content.body.find((b) => b.type === "Input.Text");
      expect(input?.id).toBe("args");
      expect(JSON.parse(input?.value ?? "")).toEqual({ title: "Call the supplier" });
      expect(edit.data).toEqual(card?.content.actions[0].data);
    });

    it("refreshes the card with the text as typed and the error when it is not JSON, and decides nothing", async () => {
      const { edit, approvalId } = await waitingChat();
      const answered = await post(invoke(editWith(edit, "{title"), USER_AAD));
      expect(answered.body).toMatchObject({ statusCode: 200, type: "application/vnd.microsoft.card.adaptive" });
      const card = refreshed(answered.body);
      expect(card.body.find((b) => b.type === "Input.Text")?.value).toBe("{title");
      expect(card.body.find((b) => b.color === "Attention")?.text).toBe("Not JSON: write the arguments as a JSON object.");
      expect(card.actions.map((a) => a.verb)).toContain("threadwise.approval.edit");
      expect(await approvalStatus(approvalId)).toBe("pending");
    });

    it("refreshes the card with the field's error when the tool's schema refuses the arguments, and decides nothing", async () => {
      const { edit, approvalId } = await waitingChat();
      const answered = await post(invoke(editWith(edit, '{"title": "x"}'), USER_AAD));
      expect(refreshed(answered.body).body.find((b) => b.color === "Attention")?.text).toMatch(/^title: Too small/);
      expect(await approvalStatus(approvalId)).toBe("pending");
      expect(await followUps(approvalId)).toBe(0);
    });

    it("refreshes the card with why, the arguments as they were, for an edit over 20,000 characters, and decides nothing", async () => {
      const { edit, approvalId } = await waitingChat();
      const typed = JSON.stringify({ title: "Call the supplier", details: "x".repeat(20_001) });
      const answered = await post(invoke(editWith(edit, typed), USER_AAD));
      expect(answered.body).toMatchObject({ statusCode: 200, type: "application/vnd.microsoft.card.adaptive" });
      const card = refreshed(answered.body);
      expect(card.body.find((b) => b.color === "Attention")?.text).toBe("Too long: the arguments may have at most 20,000 characters.");
      expect(JSON.parse(card.body.find((b) => b.type === "Input.Text")?.value ?? "")).toEqual({ title: "Call the supplier" });
      expect(await approvalStatus(approvalId)).toBe("pending");
    });

    it("runs the call once with the edited arguments and refreshes the card naming who edited", async () => {
      const { edit, approvalId } = await waitingChat();
      const answered = await post(invoke(editWith(edit, '{"title": "Call the new supplier"}'), LEAD_AAD));
      await t.server.turnQueue.drain();
      expect(refreshed(answered.body).body[0].text).toMatch(new RegExp(`^create_follow_up: edited by ${LEAD_AAD} at `));
      expect(await approvalStatus(approvalId)).toBe("edited");
      const approval = await t.db.collection("approvals").findOne({ _id: approvalId as never });
      const created = await t.db.collection("follow_ups").find({ turnId: approval?.turnId }).toArray();
      expect(created.map((f) => f.title)).toEqual(["Call the new supplier"]);
    });

    it("answers an edit by a user without the role with a message, and the card keeps its buttons", async () => {
      const { edit, approvalId } = await waitingChat();
      const answered = await post(invoke(editWith(edit, '{"title": "Call someone else"}'), "6f0c0000-0000-4000-8000-0000000000ff"));
      expect(answered.body).toEqual({ statusCode: 200, type: "application/vnd.microsoft.activity.message", value: "You may not decide this approval." });
      expect(await approvalStatus(approvalId)).toBe("pending");
    });
  });
});
