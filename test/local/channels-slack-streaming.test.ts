import { parseSlackEvent, slackTurnJob, type SlackUserMessage } from "../../lib/channels/index.js";
import { turnIdForJob } from "../../lib/queue/index.js";
import { slackPrincipal } from "../../lib/auth/principal.js";
import { startTestServer, type TestServer } from "../support/api-client.js";
import { lastUserText, startConverseEndpoint, type ConverseEndpoint, type ConverseRequest, type ScriptedReply } from "../support/converse-endpoint.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../support/slack-api-endpoint.js";
import { signSlackRequest, TEST_SLACK_SIGNING_SECRET } from "../support/slack-signing.js";
import { appMention, BOT_USER, CHANNEL, DM, directMessage, envelope, TEAM, USER } from "../channels/slack/fixtures.js";

const BOT_TOKEN = "xoxb-local-stream-token";

function respond(request: ConverseRequest): ScriptedReply {
  const text = lastUserText(request);
  const toolResult = request.messages.at(-1)?.content.flatMap((b) => ("toolResult" in b ? [b.toolResult] : []))[0];
  if (toolResult) return { text: `done: ${JSON.stringify(toolResult.content)}` };
  if (text.includes("follow-up")) return { text: "I will ask first.", toolUses: [{ name: "create_follow_up", input: { title: "Call the supplier" } }] };
  if (text.includes("break")) return { text: "Half an answer", streamError: { type: "modelStreamErrorException", message: "stopped", afterDeltas: 1 } };
  return { text: `streamed answer to: ${text}` };
}

let converse: ConverseEndpoint;

beforeAll(async () => {
  converse = await startConverseEndpoint({ respond });
  for (const [name, value] of Object.entries(converse.environment)) vi.stubEnv(name, value);
});

afterAll(async () => {
  await converse?.close();
  vi.unstubAllEnvs();
});

/** The local server with the Slack channel on, against a Slack stand-in that lets the app stream or not. */
async function slackServer(streaming: boolean, env: Record<string, string> = {}): Promise<{ t: TestServer; slack: SlackApiEndpoint }> {
  const slack = await startSlackApiEndpoint({ botToken: BOT_TOKEN, teamId: TEAM, botUserId: BOT_USER, streaming });
  const t = await startTestServer(
    { MODEL_PROVIDER: "bedrock", SLACK_API_URL: slack.slackApiUrl, TURN_MAX_RECEIVES: "1", ...env },
    { channels: { slack: { signingSecret: TEST_SLACK_SIGNING_SECRET, botToken: BOT_TOKEN } } },
  );
  return { t, slack };
}

let tsCounter = 0;
function nextTs(): string {
  tsCounter += 1;
  return `1700002${String(tsCounter).padStart(3, "0")}.000100`;
}

async function deliver(t: TestServer, body: string): Promise<void> {
  const response = await fetch(`${t.url}/slack/events`, { method: "POST", headers: signSlackRequest(body), body });
  expect(response.status).toBe(200);
  await t.server.turnQueue.drain();
}

const streamText = (pieces: string[]) => pieces.join("");

describe("local server: Slack streaming", () => {
  let t: TestServer;
  let slack: SlackApiEndpoint;

  beforeAll(async () => ({ t, slack } = await slackServer(true)));
  afterAll(async () => {
    await t?.close();
    await slack?.close();
  });

  it("streams the answer in a channel thread, naming its recipient, after a thinking status, and posts no message", async () => {
    const ts = nextTs();
    await deliver(t, envelope(appMention({ ts, event_ts: ts, text: `<@${BOT_USER}> how are sales?` })));
    const streams = slack.streams.filter((s) => s.threadTs === ts);
    expect(streams).toEqual([
      {
        channel: CHANNEL,
        threadTs: ts,
        ts: expect.any(String),
        recipientTeamId: TEAM,
        recipientUserId: USER,
        pieces: expect.any(Array),
        stopped: true,
        startedAt: expect.any(Number),
      },
    ]);
    expect(streamText(streams[0].pieces)).toBe("streamed answer to: how are sales?");
    expect(slack.statuses.filter((s) => s.threadTs === ts)).toEqual([{ channelId: CHANNEL, threadTs: ts, status: "is thinking…" }]);
    expect(slack.posts.filter((p) => p.threadTs === ts)).toEqual([]);
  });

  it("streams in a DM without recipient fields", async () => {
    const ts = nextTs();
    await deliver(t, envelope(directMessage({ ts, event_ts: ts, text: "hello in private" })));
    const [stream] = slack.streams.filter((s) => s.threadTs === ts);
    expect(stream).toMatchObject({ channel: DM, stopped: true });
    expect(stream).not.toHaveProperty("recipientUserId");
    expect(streamText(stream.pieces)).toBe("streamed answer to: hello in private");
  });

  it("closes the stream with the failure message when the model fails mid-stream for good", async () => {
    const ts = nextTs();
    await deliver(t, envelope(appMention({ ts, event_ts: ts, text: `<@${BOT_USER}> break please` })));
    const [stream] = slack.streams.filter((s) => s.threadTs === ts);
    expect(stream.stopped).toBe(true);
    expect(stream.pieces[0]).toBe("Half ");
    expect(stream.pieces.length).toBeGreaterThan(1);
    expect(slack.posts.filter((p) => p.threadTs === ts)).toEqual([]);
  });

  it("never starts a second stream for a redelivered event: a turn another attempt began streaming answers in one message", async () => {
    const ts = nextTs();
    const body = envelope(appMention({ ts, event_ts: ts, text: `<@${BOT_USER}> once only` }));
    const job = slackTurnJob((parseSlackEvent(body) as { message: SlackUserMessage }).message, new Date());
    // A delivery streams the turn; then its reply is taken as unsent, as when a worker dies before recording it.
    await t.server.worker.process(job, 1);
    const first = slack.streams.filter((s) => s.threadTs === ts);
    expect(first).toHaveLength(1);
    await t.db.collection("turns").updateOne({ _id: turnIdForJob(job) as never }, { $unset: { repliedAt: "", replyClaimedAt: "" } });
    expect(await t.server.worker.process(job, 2)).toMatchObject({ kind: "completed" });
    expect(slack.streams.filter((s) => s.threadTs === ts)).toHaveLength(1);
    expect(slack.posts.filter((p) => p.threadTs === ts).map((p) => p.text)).toEqual(["streamed answer to: once only"]);
  });
});

describe("local server: Slack streaming with approvals", () => {
  it("closes the stream where the turn pauses for approval, and streams the resumed turn's answer as a second stream", async () => {
    const { t, slack } = await slackServer(true, { TOOL_APPROVALS: JSON.stringify({ create_follow_up: { require: "always" } }) });
    try {
      const ts = nextTs();
      await deliver(t, envelope(appMention({ ts, event_ts: ts, text: `<@${BOT_USER}> make a follow-up` })));
      const paused = slack.streams.filter((s) => s.threadTs === ts);
      expect(paused.map((s) => ({ text: streamText(s.pieces), stopped: s.stopped }))).toEqual([{ text: "I will ask first.", stopped: true }]);
      expect(slack.posts.filter((p) => p.threadTs === ts).map((p) => p.text)).toEqual(["Waiting for approval: create_follow_up"]);

      const approval = await t.db.collection("approvals").findOne({ status: "pending" });
      await t.server.app.approvals.decide(
        approval!.conversationId,
        String(approval!._id),
        { principal: slackPrincipal(TEAM, USER), roles: [] },
        { kind: "approve" },
      );
      await t.server.turnQueue.drain();

      const streams = slack.streams.filter((s) => s.threadTs === ts);
      expect(streams).toHaveLength(2);
      expect(streams[1].stopped).toBe(true);
      expect(streamText(streams[1].pieces)).toContain("done: ");
      expect(slack.posts.filter((p) => p.threadTs === ts)).toHaveLength(1);
    } finally {
      await t.close();
      await slack.close();
    }
  });
});

describe("local server: Slack where streaming is not allowed", () => {
  it("answers in one message after Slack refuses chat.startStream", async () => {
    const { t, slack } = await slackServer(false);
    try {
      const ts = nextTs();
      await deliver(t, envelope(appMention({ ts, event_ts: ts, text: `<@${BOT_USER}> no streams here` })));
      expect(slack.calls.filter((c) => c.method === "chat.startStream")).toHaveLength(1);
      expect(slack.streams).toEqual([]);
      expect(slack.posts.filter((p) => p.threadTs === ts).map((p) => p.text)).toEqual(["streamed answer to: no streams here"]);
    } finally {
      await t.close();
      await slack.close();
    }
  });
});
