import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, type App } from "../../lib/app.js";
import { slackPrincipal, tenantOwner } from "../../lib/auth/principal.js";
import { channelWorker, channelWorkerFor } from "../../lib/channels/channel-worker.js";
import { loadConfig } from "../../lib/config/config.js";
import { silentLogger } from "../../lib/logger.js";
import type { TurnJob } from "../../lib/queue/turn-job.js";
import { turnIdForJob } from "../../lib/queue/turn-queue.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../support/slack-api-endpoint.js";
import { useTestDatabase } from "../support/store-fixture.js";

const BOT_TOKEN = "xoxb-channel-worker-test";
const TEAM = "T0WORKER";
const database = useTestDatabase("channel_worker", { clearBeforeEach: false });
let app: App;
let slack: SlackApiEndpoint;

beforeAll(async () => {
  slack = await startSlackApiEndpoint({ botToken: BOT_TOKEN, teamId: TEAM });
  // The offline model answers at once.
  const config = loadConfig({ MONGODB_URI: "mongodb://unused", MONGODB_DB: database.dbName, MODEL_PROVIDER: "local" });
  app = await createApp(config, { mongoClient: database.client, tools: [], logger: silentLogger });
});
afterAll(async () => {
  await app?.close();
  await slack?.close();
});

let events = 0;
function slackJob(content: string): TurnJob {
  events += 1;
  const threadTs = `1700000000.00${String(events).padStart(4, "0")}`;
  return {
    channel: "slack",
    conversationKey: `${TEAM}:C1:${threadTs}`,
    principal: slackPrincipal(TEAM, "U1"),
    owner: tenantOwner("slack", TEAM),
    readScope: `slack:${TEAM}:C1`,
    content,
    dedupeId: `Ev${events}`,
    receivedAt: new Date().toISOString(),
    replyTo: { teamId: TEAM, channelId: "C1", threadTs },
  } as TurnJob;
}

const worker = (replies: Parameters<typeof channelWorker>[0]["replies"]) =>
  channelWorker({
    app,
    replies,
    endpoints: { slackApiUrl: slack.slackApiUrl },
    channelRoles: { slack: {}, teams: {} },
    maxReceives: 3,
    maxMessageChars: 4_000,
  });

describe("channelWorker", () => {
  it("returns a worker that runs a Slack job and replies in its thread through the configured Slack API", async () => {
    const job = slackJob("Hello from Slack?");
    const outcome = await worker({ slack: { botToken: BOT_TOKEN } }).process(job, 1);
    expect(outcome.kind).toBe("completed");
    expect(slack.posts.filter((p) => p.threadTs !== undefined && job.conversationKey.endsWith(p.threadTs))).toHaveLength(1);
  });

  it("returns a worker that retries a job of a channel it cannot answer in, and gives it up at the last receive, posting nothing", async () => {
    const before = slack.posts.length;
    const job = slackJob("Anyone?");
    expect((await worker({}).process(job, 1)).kind).toBe("retry");
    expect((await worker({}).process(job, 3)).kind).toBe("gave-up");
    expect(slack.posts.length).toBe(before);
  });
});

describe("channelWorkerFor", () => {
  const settings = (env: Record<string, string> = {}) =>
    loadConfig({ MONGODB_URI: "mongodb://unused", MONGODB_DB: database.dbName, SLACK_API_URL: slack.slackApiUrl, ...env });

  it("returns a worker that answers through the configured Slack API", async () => {
    const job = slackJob("Hello again from Slack?");
    expect((await channelWorkerFor(settings(), app, { slack: { botToken: BOT_TOKEN } }).process(job, 1)).kind).toBe("completed");
    expect(slack.posts.filter((p) => p.threadTs !== undefined && job.conversationKey.endsWith(p.threadTs))).toHaveLength(1);
  });

  it("returns a worker that refuses a message over the configured MAX_MESSAGE_CHARS, calling no model", async () => {
    const job = slackJob("x".repeat(41));
    await channelWorkerFor(settings({ MAX_MESSAGE_CHARS: "40" }), app, { slack: { botToken: BOT_TOKEN } }).process(job, 1);
    expect(await app.database.turns.get(turnIdForJob(job))).toMatchObject({ status: "failed", error: { code: "payload_too_large" } });
    expect(await app.database.turns.listCalls(turnIdForJob(job))).toEqual([]);
  });
});
