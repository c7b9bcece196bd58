import { parseSlackEvent, slackTurnJob, type SlackUserMessage } from "../../lib/channels/index.js";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { lastUserText, startConverseEndpoint, type ConverseEndpoint } from "../support/converse-endpoint.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../support/slack-api-endpoint.js";
import { signSlackRequest, TEST_SLACK_SIGNING_SECRET } from "../support/slack-signing.js";
import { appMention, BOT_USER, CHANNEL, DM, directMessage, envelope, TEAM } from "../channels/slack/fixtures.js";

const BOT_TOKEN = "xoxb-local-test-token";
/** Small, so a message over it is easy to send. */
const MAX_MESSAGE_CHARS = 500;

let slackApi: SlackApiEndpoint;
let converse: ConverseEndpoint;
let t: TestServer;

beforeAll(async () => {
  slackApi = await startSlackApiEndpoint({ botToken: BOT_TOKEN, teamId: TEAM, botUserId: BOT_USER });
  converse = await startConverseEndpoint({
    respond: (request) => {
      const text = lastUserText(request);
      // A request Bedrock refuses outright (400): the turn fails for good at once.
      if (text.includes("refused")) return { error: { status: 400, type: "ValidationException", message: "The model rejected the request." } };
      return { text: `answer to: ${text}` };
    },
  });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
  t = await startTestServer(
    { MODEL_PROVIDER: "bedrock", SLACK_API_URL: slackApi.slackApiUrl, MAX_MESSAGE_CHARS: String(MAX_MESSAGE_CHARS) },
    { channels: { slack: { signingSecret: TEST_SLACK_SIGNING_SECRET, botToken: BOT_TOKEN } } },
  );
});

afterAll(async () => {
  await t?.close();
  await slackApi?.close();
  await converse?.close();
  vi.unstubAllEnvs();
});

let tsCounter = 0;
/** A fresh thread root, so each test has a conversation of its own. */
function nextTs(): string {
  tsCounter += 1;
  return `1700001${String(tsCounter).padStart(3, "0")}.000100`;
}

async function postEvent(body: string, options: { retryNum?: number; headers?: Record<string, string> } = {}) {
  const started = performance.now();
  const response = await fetch(`${t.url}/slack/events`, {
    method: "POST",
    headers: { ...signSlackRequest(body, { retryNum: options.retryNum }), ...options.headers },
    body,
  });
  return { status: response.status, text: await response.text(), ms: performance.now() - started };
}

/** Posts to the thread rooted at `threadTs`. */
const postsIn = (threadTs: string) => slackApi.posts.filter((p) => p.threadTs === threadTs);

/** The turn the worker runs for a message, read from the database through the store (answers are encrypted at rest). */
async function turnsOf(threadTs: string, channel = CHANNEL) {
  const conversation = await t.db.collection<{ _id: string }>("conversations").findOne({ "channel.key": `slack:${TEAM}:${channel}:${threadTs}` });
  if (!conversation) return [];
  return t.server.app.database.turns.list(conversation._id, { limit: 100 });
}

describe("local server: Slack", () => {
  describe("POST /slack/events", () => {
    it("answers an app_mention once, in its thread, with the turn's answer", async () => {
      const ts = nextTs();
      const response = await postEvent(envelope(appMention({ ts, event_ts: ts, text: `<@${BOT_USER}> what were last month's sales?` })));
      expect(response.status).toBe(200);
      await t.server.turnQueue.drain();
      expect(postsIn(ts)).toEqual([{ channel: CHANNEL, threadTs: ts, text: "answer to: what were last month's sales?", ts: expect.any(String) }]);
      const turns = await turnsOf(ts);
      expect(turns).toHaveLength(1);
      expect(turns[0]).toMatchObject({ status: "completed", answer: "answer to: what were last month's sales?", repliedAt: expect.any(Date) });
    });

    it("answers a reply in a thread in that thread, as a second turn of the same conversation", async () => {
      const root = nextTs();
      await postEvent(envelope(appMention({ ts: root, event_ts: root, text: `<@${BOT_USER}> first question` })));
      await t.server.turnQueue.drain();
      const reply = nextTs();
      await postEvent(envelope(appMention({ ts: reply, thread_ts: root, event_ts: reply, text: `<@${BOT_USER}> follow-up question` })));
      await t.server.turnQueue.drain();
      expect(postsIn(root).map((p) => p.text)).toEqual(["answer to: first question", "answer to: follow-up question"]);
      expect(await turnsOf(root)).toHaveLength(2);
    });

    it("answers a direct message in the DM, threaded under it", async () => {
      const ts = nextTs();
      await postEvent(envelope(directMessage({ ts, event_ts: ts, text: "hello from a DM" })));
      await t.server.turnQueue.drain();
      expect(postsIn(ts)).toEqual([expect.objectContaining({ channel: DM, text: "answer to: hello from a DM" })]);
    });

    it("runs one turn and posts one reply when Slack retries an event (same event_id, X-Slack-Retry-Num)", async () => {
      const ts = nextTs();
      const body = envelope(appMention({ ts, event_ts: ts, text: `<@${BOT_USER}> retried question` }));
      const first = await postEvent(body);
      const retry = await postEvent(body, { retryNum: 1 });
      const again = await postEvent(body, { retryNum: 2 });
      expect([first.status, retry.status, again.status]).toEqual([200, 200, 200]);
      await t.server.turnQueue.drain();
      expect(postsIn(ts)).toHaveLength(1);
      expect(await turnsOf(ts)).toHaveLength(1);
    });

    it("ignores a bot's message: no turn, no reply", async () => {
      const ts = nextTs();
      const posts = slackApi.posts.length;
      const response = await postEvent(envelope(directMessage({ ts, event_ts: ts, bot_id: "B0OTHER", text: "beep" })));
      expect(response.status).toBe(200);
      await t.server.turnQueue.drain();
      expect(slackApi.posts.length).toBe(posts);
      expect(await turnsOf(ts, DM)).toEqual([]);
    });

    it("refuses a tampered body with 401 and runs nothing", async () => {
      const ts = nextTs();
      const body = envelope(appMention({ ts, event_ts: ts }));
      const headers = signSlackRequest(body);
      const response = await fetch(`${t.url}/slack/events`, { method: "POST", headers, body: body.replace("sales", "salez") });
      expect(response.status).toBe(401);
      await t.server.turnQueue.drain();
      expect(postsIn(ts)).toEqual([]);
    });

    it("answers url_verification with the challenge", async () => {
      const response = await postEvent(
        JSON.stringify({ token: "x", challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", type: "url_verification" }),
      );
      expect(response.status).toBe(200);
      expect(JSON.parse(response.text)).toEqual({ challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" });
    });

    it("tells the user in the thread when the model refuses the turn, without retrying it", async () => {
      const ts = nextTs();
      const modelCalls = converse.requests.length;
      await postEvent(envelope(appMention({ ts, event_ts: ts, text: `<@${BOT_USER}> this will be refused` })));
      await t.server.turnQueue.drain();
      expect(postsIn(ts)).toEqual([expect.objectContaining({ text: "Sorry, something went wrong and I couldn't answer this message. Please try again." })]);
      expect(converse.requests.length).toBe(modelCalls + 1);
      expect(await turnsOf(ts)).toEqual([expect.objectContaining({ status: "failed", repliedAt: expect.any(Date) })]);
    });

    it("tells the user in the thread when the message is over the limit, and calls no model", async () => {
      const ts = nextTs();
      const modelCalls = converse.requests.length;
      await postEvent(envelope(appMention({ ts, event_ts: ts, text: `<@${BOT_USER}> ${"x".repeat(MAX_MESSAGE_CHARS + 1)}` })));
      await t.server.turnQueue.drain();
      expect(postsIn(ts).map((p) => p.text)).toEqual([
        `That message is too long for me (the limit is ${MAX_MESSAGE_CHARS} characters). Please shorten it and send it again.`,
      ]);
      expect(converse.requests.length).toBe(modelCalls);
      expect(await turnsOf(ts)).toEqual([expect.objectContaining({ status: "failed", error: expect.objectContaining({ code: "payload_too_large" }) })]);
    });

    it("sends no second reply when the worker gets the job again after replying", async () => {
      const ts = nextTs();
      const body = envelope(appMention({ ts, event_ts: ts, text: `<@${BOT_USER}> delivered twice` }));
      await postEvent(body);
      await t.server.turnQueue.drain();
      expect(postsIn(ts)).toHaveLength(1);
      const modelCalls = converse.requests.length;
      // The queue's redelivery (the worker died after posting, before the message was deleted)
      // bypasses ingress dedupe: the same job reaches the worker again.
      const delivery = parseSlackEvent(body);
      const job = slackTurnJob((delivery as { message: SlackUserMessage }).message, new Date());
      await t.server.turnQueue.enqueue(job);
      await t.server.turnQueue.drain();
      expect(await t.server.worker.process(job, 3)).toEqual({ kind: "already-replied", turnId: expect.any(String) });
      expect(postsIn(ts)).toHaveLength(1);
      expect(converse.requests.length).toBe(modelCalls);
    });

    it("acknowledges within Slack's three seconds while turns run", async () => {
      const latencies: number[] = [];
      for (let i = 0; i < 20; i += 1) {
        const ts = nextTs();
        const response = await postEvent(envelope(appMention({ ts, event_ts: ts, text: `<@${BOT_USER}> question ${i}` })));
        expect(response.status).toBe(200);
        latencies.push(response.ms);
      }
      await t.server.turnQueue.drain();
      latencies.sort((a, b) => a - b);
      expect(latencies[Math.ceil(latencies.length * 0.95) - 1]).toBeLessThan(3_000);
    });
  });
});

describe("local server without channel credentials", () => {
  let bare: TestServer;
  beforeAll(async () => {
    bare = await startTestServer();
  });
  afterAll(async () => bare?.close());

  describe("POST /slack/events", () => {
    it("returns 503 channel_not_configured naming the variables to set", async () => {
      const body = envelope(appMention());
      const response = await bare.call("POST", "/slack/events", { body, headers: signSlackRequest(body) });
      expect(response.status).toBe(503);
      expect(response.body.error).toEqual({ code: "channel_not_configured", message: expect.stringContaining("SLACK_SIGNING_SECRET") });
    });
  });

  describe("POST /teams/messages", () => {
    it("returns 503 channel_not_configured naming the variables to set", async () => {
      const response = await bare.call("POST", "/teams/messages", { json: { type: "message" } });
      expect(response.status).toBe(503);
      expect(response.body.error).toEqual({ code: "channel_not_configured", message: expect.stringContaining("TEAMS_APP_ID") });
    });
  });
});
