import { describe, expect, it } from "vitest";
import { ChannelEventDeduper } from "../../lib/channels/channel-event-deduper.js";
import { channelHandlers, channelHandlersFor } from "../../lib/channels/channel-handlers.js";
import { loadConfig } from "../../lib/config/config.js";
import type { ChannelApprovals } from "../../lib/channels/channel-decisions.js";
import type { StructuredLogger } from "../../lib/logger.js";
import type { TurnJob } from "../../lib/queue/turn-job.js";
import { signSlackRequest, TEST_SLACK_SIGNING_SECRET } from "../support/slack-signing.js";
import { useStoreFixture } from "../support/store-fixture.js";
import { TEST_APP_ID } from "../support/teams-signing.js";
import { appMention, envelope } from "./slack/fixtures.js";

const { deduper } = useStoreFixture("channel_handlers", (db) => ({ deduper: new ChannelEventDeduper(db) })).stores;
const notCalled = async (): Promise<never> => {
  throw new Error("not called here");
};
const approvals: ChannelApprovals = { decide: notCalled, forDecision: notCalled };

function recordingLogger(): StructuredLogger & { lines: [string, Record<string, unknown>][] } {
  const lines: [string, Record<string, unknown>][] = [];
  const info = (message: string, fields: Record<string, unknown>) => void lines.push([message, fields]);
  return { lines, info, warn: info, error: info };
}

describe("channelHandlers", () => {
  it("returns no handler for a channel without credentials, unless asked to answer it as not configured", () => {
    expect(channelHandlers({ deduper, enqueue: async () => undefined })).toEqual({});
  });

  it("returns handlers that answer 503 with the hint for the channels without credentials", async () => {
    const handlers = channelHandlers({ deduper, enqueue: async () => undefined, notConfigured: { slack: "set the slack key", teams: "set the teams key" } });
    for (const [handler, message] of [
      [handlers.slack, "slack is not configured: set the slack key"],
      [handlers.teams, "teams is not configured: set the teams key"],
    ] as const) {
      const response = await handler!({ headers: {}, rawBody: "{}" });
      expect(response.status).toBe(503);
      expect(JSON.parse(response.body).error).toEqual({ code: "channel_not_configured", message });
    }
    expect(handlers.slackInteractivity).toBeUndefined();
  });

  it("returns a Slack handler that verifies, enqueues and logs the outcome, and an interactivity handler only with decisions", async () => {
    const queue: TurnJob[] = [];
    const logger = recordingLogger();
    const slack = { signingSecret: TEST_SLACK_SIGNING_SECRET };
    const handlers = channelHandlers({ slack, deduper, enqueue: async (job) => void queue.push(job), logger });
    expect(handlers.slackInteractivity).toBeUndefined();
    const rawBody = envelope(appMention());
    expect((await handlers.slack!({ headers: signSlackRequest(rawBody), rawBody })).status).toBe(200);
    expect(queue.map((j) => j.channel)).toEqual(["slack"]);
    expect(logger.lines.map(([message]) => message)).toEqual(["slack event"]);
    expect(channelHandlers({ slack, deduper, enqueue: async () => undefined, approvals }).slackInteractivity).toBeInstanceOf(Function);
  });

  it("returns a Teams handler that refuses an unsigned activity and logs why", async () => {
    const logger = recordingLogger();
    const handlers = channelHandlers({
      teams: { appId: TEST_APP_ID, openIdMetadataUrl: "http://127.0.0.1:1/unused" },
      deduper,
      enqueue: async () => undefined,
      logger,
    });
    expect(handlers.slack).toBeUndefined();
    expect((await handlers.teams!({ headers: {}, rawBody: "{}" })).status).toBe(401);
    expect(logger.lines).toEqual([["teams activity", expect.objectContaining({ reason: "missing" })]]);
  });
});

describe("channelHandlersFor", () => {
  const config = loadConfig({ MONGODB_URI: "mongodb://unused", TEAMS_OPENID_METADATA_URL: "http://127.0.0.1:1/unused" });
  const hints = { slack: "set the slack key", teams: "set the teams key" };

  it("returns a handler that verifies a signed Slack event and enqueues it, and the hint for the channel without keys", async () => {
    const queue: TurnJob[] = [];
    const handlers = channelHandlersFor(config, {
      ingress: { slack: { signingSecret: TEST_SLACK_SIGNING_SECRET } },
      notConfigured: hints,
      deduper,
      enqueue: async (job) => void queue.push(job),
    });
    const rawBody = envelope(appMention());
    expect((await handlers.slack!({ headers: signSlackRequest(rawBody), rawBody })).status).toBe(200);
    expect(queue.map((j) => j.channel)).toEqual(["slack"]);
    const teams = await handlers.teams!({ headers: {}, rawBody: "{}" });
    expect([teams.status, JSON.parse(teams.body).error.message]).toEqual([503, "teams is not configured: set the teams key"]);
  });

  it("returns a Slack handler that refuses an event signed with another workspace's key, enqueuing nothing", async () => {
    const queue: TurnJob[] = [];
    const handlers = channelHandlersFor(config, {
      ingress: { slack: { signingSecret: "another-workspace-secret" } },
      notConfigured: hints,
      deduper,
      enqueue: async (job) => void queue.push(job),
    });
    const rawBody = envelope(appMention());
    expect((await handlers.slack!({ headers: signSlackRequest(rawBody), rawBody })).status).toBe(401);
    expect(queue).toEqual([]);
  });

  it("returns a Teams handler that refuses an unsigned activity", async () => {
    const handlers = channelHandlersFor(config, { ingress: { teams: { appId: TEST_APP_ID } }, notConfigured: hints, deduper, enqueue: async () => undefined });
    expect((await handlers.teams!({ headers: {}, rawBody: "{}" })).status).toBe(401);
  });
});
