import { startTestServer, type TestServer } from "../support/api-client.js";
import { startBotConnectorEndpoint, type BotConnectorEndpoint } from "../support/bot-connector-endpoint.js";
import { lastUserText, startConverseEndpoint, type ConverseEndpoint } from "../support/converse-endpoint.js";
import { startBotFrameworkIssuer, TEST_APP_ID, type BotFrameworkIssuer } from "../support/teams-signing.js";
import { BOT_ACCOUNT, CHANNEL_THREAD, channelMention, messageActivity, PERSONAL_CONVERSATION, USER_ACCOUNT } from "../channels/teams/fixtures.js";

const APP_PASSWORD = "local-test-client-secret";

let issuer: BotFrameworkIssuer;
let connector: BotConnectorEndpoint;
let converse: ConverseEndpoint;
let t: TestServer;

beforeAll(async () => {
  issuer = await startBotFrameworkIssuer();
  connector = await startBotConnectorEndpoint({ appId: TEST_APP_ID, appPassword: APP_PASSWORD });
  converse = await startConverseEndpoint({
    respond: (request) => {
      const text = lastUserText(request);
      if (text.includes("refused")) return { error: { status: 400, type: "ValidationException", message: "The model rejected the request." } };
      return { text: `answer to: ${text}` };
    },
  });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
  t = await startTestServer(
    {
      MODEL_PROVIDER: "bedrock",
      TEAMS_OPENID_METADATA_URL: issuer.openIdMetadataUrl,
      TEAMS_TOKEN_URL: connector.tokenUrl,
      TEAMS_SERVICE_URL_ORIGIN: connector.serviceUrl,
    },
    { channels: { teams: { appId: TEST_APP_ID, appPassword: APP_PASSWORD } } },
  );
});

afterAll(async () => {
  await t?.close();
  await connector?.close();
  await issuer?.close();
  await converse?.close();
  vi.unstubAllEnvs();
});

/** Posts an activity as the Bot Framework does: JSON, with a bearer token naming its serviceUrl. */
async function postActivity(activity: Record<string, unknown>, token?: string) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  const bearer = token ?? (await issuer.sign({ serviceUrl: activity.serviceUrl as string }));
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  const response = await fetch(`${t.url}/teams/messages`, { method: "POST", headers, body: JSON.stringify(activity) });
  return { status: response.status, text: await response.text() };
}

const repliesTo = (activityId: string) => connector.replies.filter((r) => r.activityId === activityId);

describe("local server: Teams", () => {
  describe("POST /teams/messages", () => {
    it("answers a personal-chat message once, through the Bot Connector, to its conversation and activity", async () => {
      const activity = messageActivity(connector.serviceUrl, { text: "what were last month's sales?" });
      const response = await postActivity(activity);
      expect(response.status).toBe(202);
      await t.server.turnQueue.drain();
      expect(repliesTo(activity.id as string)).toEqual([
        {
          conversationId: PERSONAL_CONVERSATION,
          activityId: activity.id,
          activity: expect.objectContaining({
            type: "message",
            text: "answer to: what were last month's sales?",
            replyToId: activity.id,
            from: expect.objectContaining({ id: BOT_ACCOUNT }),
            recipient: { id: USER_ACCOUNT },
          }),
        },
      ]);
      expect(connector.tokenRequests.every((r) => r.clientId === TEST_APP_ID)).toBe(true);
    });

    it("answers a channel mention in its thread, the bot's mention removed from the question", async () => {
      const activity = channelMention(connector.serviceUrl);
      await postActivity(activity);
      await t.server.turnQueue.drain();
      expect(repliesTo(activity.id as string)).toEqual([
        expect.objectContaining({ conversationId: CHANNEL_THREAD, activity: expect.objectContaining({ text: "answer to: and the month before?" }) }),
      ]);
    });

    it("runs one turn and sends one reply when the Bot Framework delivers an activity again", async () => {
      const activity = messageActivity(connector.serviceUrl, { text: "delivered twice" });
      expect((await postActivity(activity)).status).toBe(202);
      expect((await postActivity(activity)).status).toBe(200);
      await t.server.turnQueue.drain();
      expect(repliesTo(activity.id as string)).toHaveLength(1);
    });

    it("refuses an activity without a token, with a forged token, or an expired one, and runs nothing", async () => {
      const activity = messageActivity(connector.serviceUrl, { text: "not from the Bot Framework" });
      const forged = await issuer.sign({ serviceUrl: connector.serviceUrl, foreignKey: true });
      const expired = await issuer.sign({ serviceUrl: connector.serviceUrl, at: new Date(Date.now() - 2 * 3600_000), expiresInSeconds: 600 });
      const wrongServiceUrl = await issuer.sign({ serviceUrl: "https://smba.trafficmanager.net/amer/" });
      const statuses = [];
      for (const token of ["", forged, expired, wrongServiceUrl]) statuses.push((await postActivity(activity, token)).status);
      expect(statuses).toEqual([401, 401, 401, 401]);
      await t.server.turnQueue.drain();
      expect(repliesTo(activity.id as string)).toEqual([]);
    });

    it("tells the user in the conversation when the turn fails", async () => {
      const activity = messageActivity(connector.serviceUrl, { text: "this will be refused" });
      await postActivity(activity);
      await t.server.turnQueue.drain();
      expect(repliesTo(activity.id as string).map((r) => r.activity.text)).toEqual([
        "Sorry, something went wrong and I couldn't answer this message. Please try again.",
      ]);
    });

    it("sends the reply after a refused token is renewed, once", async () => {
      connector.revokeTokens();
      const activity = messageActivity(connector.serviceUrl, { text: "after a revoked token" });
      await postActivity(activity);
      await t.server.turnQueue.drain();
      expect(repliesTo(activity.id as string).map((r) => r.activity.text)).toEqual(["answer to: after a revoked token"]);
    });
  });
});
