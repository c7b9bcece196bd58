import { appMention, envelope } from "../channels/slack/fixtures.js";
import { signSlackRequest } from "../support/slack-signing.js";
import { apiEvent, lambdaContext } from "./support/events.js";
import { emfOf } from "./support/emf.js";
import { startHarness, type Harness } from "./support/harness.js";

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => h?.close());

/** POST /slack/events as API Gateway delivers it (Slack's JSON body, base64-encoded or not). */
function slackEvent(rawBody: string, headers: Record<string, string>, base64 = false) {
  return h.slack(
    apiEvent({ method: "POST", path: "/slack/events", routeKey: "POST /slack/events", body: rawBody, headers, base64 }),
    lambdaContext("test-threadwise-slack", 10_000),
  );
}

describe("functions/slack", () => {
  describe("handler", () => {
    it("returns the challenge of a signed url_verification", async () => {
      const body = JSON.stringify({ token: "x", challenge: "c-123", type: "url_verification" });
      const result = await slackEvent(body, signSlackRequest(body));
      expect(result.statusCode).toBe(200);
      expect(JSON.parse(result.body ?? "{}")).toEqual({ challenge: "c-123" });
    });

    it("returns 401 and enqueues nothing when the signature is wrong", async () => {
      const before = h.aws.sent.length;
      const body = envelope(appMention());
      const result = await slackEvent(body, signSlackRequest(body, { secret: "not-the-secret" }));
      expect(result.statusCode).toBe(401);
      expect(h.aws.sent.length).toBe(before);
    });

    it("publishes a refused request as a webhook 4xx of the slack channel, and an accepted one as nothing", async () => {
      const body = envelope(appMention({ ts: "1700000777.000100", event_ts: "1700000777.000100" }));
      const emf = await emfOf(async () => {
        await slackEvent(body, signSlackRequest(body, { secret: "not-the-secret" }));
        await slackEvent(body, signSlackRequest(body));
      });
      const webhook = emf.filter((l) => "WebhookClientErrors" in l || "WebhookServerErrors" in l);
      expect(webhook).toEqual([expect.objectContaining({ channel: "slack", WebhookClientErrors: 1, service: "threadwise-test" })]);
    });

    it("enqueues a signed, base64-delivered mention once, however often Slack retries it", async () => {
      const before = h.aws.sent.length;
      const body = envelope(appMention({ text: "<@U0BOT> what is up?" }));
      expect((await slackEvent(body, signSlackRequest(body), true)).statusCode).toBe(200);
      expect((await slackEvent(body, signSlackRequest(body, { retryNum: 1 }), true)).statusCode).toBe(200);
      const sent = h.aws.sent.slice(before);
      expect(sent).toHaveLength(1);
      expect(JSON.parse(sent[0].body)).toMatchObject({ channel: "slack", content: "what is up?" });
    });

    it("enqueues a mention holding the noncharacters U+FFFE and U+FFFF, which SQS refuses raw, with its text unchanged", async () => {
      const before = h.aws.sent.length;
      const body = envelope(appMention({ ts: "1700000778.000100", text: "<@U0BOT> sales\ufffe by\uffff region?" }));
      expect((await slackEvent(body, signSlackRequest(body))).statusCode).toBe(200);
      const sent = h.aws.sent.slice(before);
      expect(sent).toHaveLength(1);
      expect(JSON.parse(sent[0].body)).toMatchObject({ content: "sales\ufffe by\uffff region?" });
    });
  });
});
