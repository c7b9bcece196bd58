import {
  ChannelEventDeduper,
  ChannelReplier,
  SlackReplier,
  handleSlackEvent,
  type ChannelRequest,
  type SlackEventOutcome,
} from "../../../lib/channels/index.js";
import { decodeEventBody } from "../../../lib/api/index.js";
import { parseTurnJob, type TurnJob } from "../../../lib/queue/index.js";
import { Gate } from "../../support/gate.js";
import { useStoreFixture } from "../../support/store-fixture.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../../support/slack-api-endpoint.js";
import { TEST_SLACK_SIGNING_SECRET, signSlackRequest } from "../../support/slack-signing.js";
import { CHANNEL, appMention, directMessage, envelope } from "./fixtures.js";

const BOT_TOKEN = "xoxb-test-1234-abcd";

describe("slack/handle-slack-event", () => {
  const { deduper } = useStoreFixture("slack_events", (db) => ({ deduper: new ChannelEventDeduper(db) })).stores;
  let queue: string[];
  let outcomes: SlackEventOutcome[];

  beforeEach(() => {
    queue = [];
    outcomes = [];
  });

  /** Stands in for SQS: the message body is the JSON the worker will parse. */
  async function enqueue(job: TurnJob): Promise<void> {
    queue.push(JSON.stringify(job));
  }

  function deliver(request: ChannelRequest, options: { enqueue?: (job: TurnJob) => Promise<void> } = {}) {
    return handleSlackEvent({
      request,
      signingSecret: TEST_SLACK_SIGNING_SECRET,
      deduper,
      enqueue: options.enqueue ?? enqueue,
      onOutcome: (o) => outcomes.push(o),
    });
  }

  function signed(rawBody: string, retryNum?: number): ChannelRequest {
    return { headers: signSlackRequest(rawBody, { retryNum }), rawBody };
  }

  describe("handleSlackEvent", () => {
    it("returns the challenge of a signed url_verification", async () => {
      const rawBody = JSON.stringify({ token: "x", challenge: "c-123", type: "url_verification" });
      const response = await deliver(signed(rawBody));
      expect(response.status).toBe(200);
      expect(response.headers["content-type"]).toBe("application/json");
      expect(JSON.parse(response.body)).toEqual({ challenge: "c-123" });
    });

    it("returns 401 and enqueues nothing for an unsigned url_verification", async () => {
      const rawBody = JSON.stringify({ token: "x", challenge: "c-123", type: "url_verification" });
      const response = await deliver({ headers: { "content-type": "application/json" }, rawBody });
      expect(response.status).toBe(401);
      expect(response.body).not.toContain("c-123");
      expect(outcomes).toEqual([{ kind: "rejected", reason: "missing" }]);
    });

    it("returns 401 and enqueues nothing for a tampered body", async () => {
      const rawBody = envelope(appMention());
      const response = await deliver({ headers: signSlackRequest(rawBody), rawBody: rawBody.replace("sales", "salary") });
      expect(response.status).toBe(401);
      expect(queue).toHaveLength(0);
      expect(outcomes).toEqual([{ kind: "rejected", reason: "bad_signature" }]);
    });

    it("returns 401 and enqueues nothing for a replayed request older than five minutes", async () => {
      const rawBody = envelope(appMention());
      const headers = signSlackRequest(rawBody, { at: new Date(Date.now() - 10 * 60_000) });
      expect((await deliver({ headers, rawBody })).status).toBe(401);
      expect(queue).toHaveLength(0);
    });

    it("returns 200 at once and enqueues the mention as a turn job", async () => {
      const response = await deliver(signed(envelope(appMention(), "Ev0ONE")));
      expect(response).toEqual({ status: 200, headers: {}, body: "" });
      expect(queue).toHaveLength(1);
      const job = parseTurnJob(queue[0]);
      expect(job).toMatchObject({ channel: "slack", content: "what were last month's sales?", dedupeId: "slack:T0TEST:C0GENERAL:1700000100.000200" });
    });

    it("enqueues one turn for an event delivered twice (Slack's retry)", async () => {
      const rawBody = envelope(appMention(), "Ev0RETRIED");
      const first = await deliver(signed(rawBody));
      const retry = await deliver(signed(rawBody, 1));
      expect([first.status, retry.status]).toEqual([200, 200]);
      expect(queue).toHaveLength(1);
      expect(outcomes).toEqual([
        { kind: "enqueued", retryNum: 0 },
        { kind: "duplicate", retryNum: 1 },
      ]);
    });

    it("returns 200 and enqueues nothing for a bot's message", async () => {
      const response = await deliver(signed(envelope(directMessage({ bot_id: "B0OTHER", subtype: "bot_message" }))));
      expect(response.status).toBe(200);
      expect(queue).toHaveLength(0);
      expect(outcomes).toEqual([{ kind: "ignored", reason: "bot_message" }]);
    });

    it("returns 200 and enqueues nothing for an edit", async () => {
      const response = await deliver(signed(envelope(directMessage({ subtype: "message_changed", user: undefined }))));
      expect(response.status).toBe(200);
      expect(queue).toHaveLength(0);
      expect(outcomes).toEqual([{ kind: "ignored", reason: "not_user_text" }]);
    });

    it("enqueues one turn for a mention whose message is then edited (Slack sends app_mention again, with `edited`)", async () => {
      const ts = "1700000700.000100";
      await deliver(signed(envelope(appMention({ ts }))));
      const edited = appMention({ ts, text: "<@U0BOT> what were last month's sales in EMEA?", edited: { user: "U0ALICE", ts: "1700000760.000000" } });
      const response = await deliver(signed(envelope(edited)));
      expect(response).toEqual({ status: 200, headers: {}, body: "" });
      expect(queue).toHaveLength(1);
      expect(outcomes).toEqual([
        { kind: "enqueued", retryNum: 0 },
        { kind: "duplicate", retryNum: 0 },
      ]);
    });

    it("enqueues the question of a message edited to add the mention, whose first delivery is that edit", async () => {
      const edited = appMention({ ts: "1700000710.000100", text: "<@U0BOT> and the month before?", edited: { user: "U0ALICE", ts: "1700000760.000000" } });
      expect((await deliver(signed(envelope(edited)))).status).toBe(200);
      expect(queue.map((body) => parseTurnJob(body).content)).toEqual(["and the month before?"]);
    });

    it("returns 400 with x-slack-no-retry for a signed body that is not an envelope", async () => {
      const response = await deliver(signed("not json"));
      expect(response.status).toBe(400);
      expect(response.headers["x-slack-no-retry"]).toBe("1");
    });

    it("throws, and lets Slack's retry through, when the queue refuses the job", async () => {
      const rawBody = envelope(appMention(), "Ev0QUEUEDOWN");
      const refused = deliver(signed(rawBody), { enqueue: async () => Promise.reject(new Error("queue unavailable")) });
      await expect(refused).rejects.toThrow("queue unavailable");
      await deliver(signed(rawBody, 1));
      expect(queue).toHaveLength(1);
    });

    it("answers 503 to Slack's retry while the first delivery is still enqueueing, so an enqueue that then fails is retried", async () => {
      const gate = new Gate();
      const rawBody = envelope(appMention(), "Ev0SLOWQUEUE");
      const first = deliver(signed(rawBody), {
        enqueue: async () => {
          await gate.pass();
          throw new Error("queue timed out");
        },
      });
      await gate.reached;
      const retry = await deliver(signed(rawBody, 1));
      gate.open();
      await expect(first).rejects.toThrow("queue timed out");
      const last = await deliver(signed(rawBody, 2));
      expect([retry.status, last.status]).toEqual([503, 200]);
      expect(queue).toHaveLength(1);
      expect(outcomes).toEqual([
        { kind: "in_flight", retryNum: 1 },
        { kind: "enqueued", retryNum: 2 },
      ]);
    });

    it("accepts a request whose body API Gateway base64-encoded", async () => {
      const rawBody = envelope(directMessage());
      const body = decodeEventBody({ body: Buffer.from(rawBody).toString("base64"), isBase64Encoded: true }) ?? "";
      expect((await deliver({ headers: signSlackRequest(rawBody), rawBody: body })).status).toBe(200);
      expect(queue).toHaveLength(1);
    });

    it("answers in a few milliseconds, well inside Slack's three seconds", async () => {
      const timings: number[] = [];
      for (let i = 0; i < 20; i += 1) {
        const ts = `17000008${String(i).padStart(2, "0")}.000100`;
        const request = signed(envelope(appMention({ ts, event_ts: ts })));
        const started = performance.now();
        await deliver(request);
        timings.push(performance.now() - started);
      }
      timings.sort((a, b) => a - b);
      expect(timings[Math.floor(timings.length * 0.95)]).toBeLessThan(500);
      expect(queue).toHaveLength(20);
    });
  });

  describe("handleSlackEvent with the worker's replier", () => {
    let slack: SlackApiEndpoint;
    beforeEach(async () => {
      slack = await startSlackApiEndpoint({ botToken: BOT_TOKEN });
    });
    afterEach(async () => slack.close());

    /** Stands in for the worker: takes each queued job and answers it through the replier. */
    async function drain(answer: (job: TurnJob) => Promise<string>): Promise<void> {
      const replier = new ChannelReplier({ slack: new SlackReplier({ botToken: BOT_TOKEN, slackApiUrl: slack.slackApiUrl, retries: 0 }) });
      for (const body of queue.splice(0)) {
        const job = parseTurnJob(body);
        try {
          await replier.reply(job, await answer(job));
        } catch (error) {
          await replier.replyFailure(job, error);
        }
      }
    }

    it("posts one reply, in the mention's thread, for an event delivered twice", async () => {
      const rawBody = envelope(appMention({ ts: "1700000500.000100", thread_ts: "1700000100.000200" }));
      await deliver(signed(rawBody));
      await deliver(signed(rawBody, 1));
      await drain(async (job) => `You asked: ${job.content}`);
      expect(slack.posts).toHaveLength(1);
      expect(slack.posts[0]).toMatchObject({
        channel: CHANNEL,
        threadTs: "1700000100.000200",
        text: "You asked: what were last month's sales?",
      });
    });

    it("posts a short failure message in the thread when the turn fails", async () => {
      await deliver(signed(envelope(appMention({ ts: "1700000600.000100" }))));
      await drain(async () => {
        throw new Error("model unavailable: ThrottlingException");
      });
      expect(slack.posts).toHaveLength(1);
      expect(slack.posts[0].threadTs).toBe("1700000600.000100");
      expect(slack.posts[0].text).toMatch(/^Sorry, something went wrong/);
      expect(slack.posts[0].text).not.toContain("Throttling");
    });
  });
});
