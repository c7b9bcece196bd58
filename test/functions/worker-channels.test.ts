import { parseTeamsActivity, teamsTurnJob, type TeamsUserMessage } from "../../lib/channels/index.js";
import { turnJobDeduplicationId, turnJobGroupId } from "../../lib/queue/index.js";
import { appMention, envelope } from "../channels/slack/fixtures.js";
import { messageActivity, PERSONAL_CONVERSATION } from "../channels/teams/fixtures.js";
import { startBotConnectorEndpoint, type BotConnectorEndpoint } from "../support/bot-connector-endpoint.js";
import { lastUserText } from "../support/converse-endpoint.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../support/slack-api-endpoint.js";
import { signSlackRequest } from "../support/slack-signing.js";
import { apiEvent, lambdaContext, sqsEvent, sqsRecord } from "./support/events.js";
import { startHarness, TEST_TEAMS_APP_ID, type Harness } from "./support/harness.js";

let h: Harness;
let slackApi: SlackApiEndpoint;
let connector: BotConnectorEndpoint;

beforeAll(async () => {
  // The harness's secret holds this bot token and this Teams app.
  slackApi = await startSlackApiEndpoint({ botToken: "xoxb-test" });
  connector = await startBotConnectorEndpoint({ appId: TEST_TEAMS_APP_ID, appPassword: "test-password" });
  h = await startHarness({
    env: { SLACK_API_URL: slackApi.slackApiUrl, TEAMS_TOKEN_URL: connector.tokenUrl },
    converse: { respond: (request) => ({ text: `answer to: ${lastUserText(request)}` }) },
  });
});
afterAll(async () => {
  await h?.close();
  await slackApi?.close();
  await connector?.close();
});

/** A signed mention through the slack function; returns the queue message it sent. */
async function mention(ts: string, text: string) {
  const before = h.aws.sent.length;
  const body = envelope(appMention({ ts, event_ts: ts, text: `<@U0BOT> ${text}` }));
  const result = await h.slack(
    apiEvent({ method: "POST", path: "/slack/events", routeKey: "POST /slack/events", body, headers: signSlackRequest(body) }),
    lambdaContext("test-threadwise-slack", 10_000),
  );
  expect(result.statusCode).toBe(200);
  expect(h.aws.sent.length).toBe(before + 1);
  return h.aws.sent[before];
}

describe("functions/worker with channel turns", () => {
  describe("handler", () => {
    it("posts the answer of a Slack turn in its thread", async () => {
      const message = await mention("1700003000.000100", "how are sales?");
      expect(await h.worker(sqsEvent(sqsRecord(message)))).toEqual({ batchItemFailures: [] });
      expect(slackApi.posts.filter((p) => p.threadTs === "1700003000.000100").map((p) => p.text)).toEqual(["answer to: how are sales?"]);
    });

    it("posts nothing more when SQS delivers the message again after the reply", async () => {
      const message = await mention("1700003001.000100", "only once please");
      await h.worker(sqsEvent(sqsRecord(message, 1)));
      const modelCalls = h.converse.requests.length;
      expect(await h.worker(sqsEvent(sqsRecord(message, 2)))).toEqual({ batchItemFailures: [] });
      expect(slackApi.posts.filter((p) => p.threadTs === "1700003001.000100")).toHaveLength(1);
      expect(h.converse.requests.length).toBe(modelCalls);
    });

    it("returns the message for a retry when Slack fails for now, and posts once on the next receive", async () => {
      const message = await mention("1700003002.000100", "post me later");
      slackApi.failNextPost("service_unavailable");
      const first = await h.worker(sqsEvent(sqsRecord(message, 1)));
      expect(first.batchItemFailures).toEqual([{ itemIdentifier: message.messageId }]);
      expect(await h.worker(sqsEvent(sqsRecord(message, 2)))).toEqual({ batchItemFailures: [] });
      expect(slackApi.posts.filter((p) => p.threadTs === "1700003002.000100").map((p) => p.text)).toEqual(["answer to: post me later"]);
    });

    it("replies to a Teams turn through the Bot Connector, once across deliveries", async () => {
      const activity = messageActivity(connector.serviceUrl, { text: "hello from teams" });
      const delivery = parseTeamsActivity(activity);
      const job = teamsTurnJob((delivery as { message: TeamsUserMessage }).message, new Date());
      const message = {
        messageId: "teams-message-1",
        queueUrl: h.aws.sent[0]?.queueUrl ?? "",
        body: JSON.stringify(job),
        groupId: turnJobGroupId(job),
        deduplicationId: turnJobDeduplicationId(job),
        sequenceNumber: "1",
      };
      expect(await h.worker(sqsEvent(sqsRecord(message, 1)))).toEqual({ batchItemFailures: [] });
      expect(await h.worker(sqsEvent(sqsRecord(message, 2)))).toEqual({ batchItemFailures: [] });
      expect(connector.replies).toEqual([
        expect.objectContaining({
          conversationId: PERSONAL_CONVERSATION,
          activityId: activity.id,
          activity: expect.objectContaining({ text: "answer to: hello from teams" }),
        }),
      ]);
    });
  });
});
