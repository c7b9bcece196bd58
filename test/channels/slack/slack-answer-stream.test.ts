import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SlackReplier } from "../../../lib/channels/slack/slack-replier.js";
import type { TurnEvent, TurnEventBody } from "../../../lib/events/turn-event-types.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../../support/slack-api-endpoint.js";

const BOT_TOKEN = "xoxb-answer-stream-test";
const TEAM = "T0STREAM";
const target = { teamId: TEAM, channelId: "C0CHANNEL", threadTs: "1700000100.000200" };
let slack: SlackApiEndpoint;
let slackNoStreaming: SlackApiEndpoint;

beforeEach(async () => {
  slack = await startSlackApiEndpoint({ botToken: BOT_TOKEN, teamId: TEAM, streaming: true });
  slackNoStreaming = await startSlackApiEndpoint({ botToken: BOT_TOKEN, teamId: TEAM });
});
afterEach(async () => {
  await slack.close();
  await slackNoStreaming.close();
});

const stream = (endpoint = slack, to = target, claim = true) =>
  new SlackReplier({ botToken: BOT_TOKEN, slackApiUrl: endpoint.slackApiUrl, retries: 0 }).openStream(to, "U0ASKER", async () => claim);

let id = 0;
const event = (body: TurnEventBody): TurnEvent => ({ ...body, id: ++id });
const text = (delta: string, modelCall = 0) => event({ type: "text", modelCall, delta });

describe("SlackAnswerStream", () => {
  it("streams the answer to the asker in the thread: started at the first text, appended, stopped at the end", async () => {
    const answer = stream();
    answer.onEvent(event({ type: "progress", step: "model", modelCall: 0 }));
    answer.onEvent(text("Sales "));
    answer.onEvent(text("were 1.2M."));
    await answer.finish("Sales were 1.2M.");
    expect(slack.streams).toHaveLength(1);
    expect(slack.streams[0]).toMatchObject({
      channel: target.channelId,
      threadTs: target.threadTs,
      recipientTeamId: TEAM,
      recipientUserId: "U0ASKER",
      stopped: true,
    });
    expect(slack.streams[0].pieces.join("")).toBe("Sales were 1.2M.");
    expect(slack.posts).toEqual([]);
  });

  it("names no recipient in a direct message", async () => {
    const answer = stream(slack, { ...target, channelId: "D0DIRECT" });
    answer.onEvent(text("Hi."));
    await answer.finish("Hi.");
    expect(slack.streams[0].recipientUserId).toBeUndefined();
  });

  it("sets the thread's status while the model thinks and while a tool runs, before any text", async () => {
    const answer = stream();
    answer.onEvent(event({ type: "progress", step: "model", modelCall: 0 }));
    answer.onEvent(event({ type: "tool_started", tool: "sql_query", toolCallId: "c1" }));
    answer.onEvent(text("Done."));
    await answer.finish("Done.");
    expect(slack.statuses.map((s) => s.status)).toEqual(["is thinking…", "is running sql_query…"]);
  });

  it("starts a later model call's text as a new paragraph", async () => {
    const answer = stream();
    answer.onEvent(text("Let me check."));
    answer.onEvent(event({ type: "progress", step: "model", modelCall: 1 }));
    answer.onEvent(text("Sales were 1.2M.", 1));
    await answer.finish("Sales were 1.2M.");
    expect(slack.streams[0].pieces.join("")).toBe("Let me check.\n\nSales were 1.2M.");
  });

  it("posts the answer as one message where Slack refuses to stream, or another attempt already streamed the turn", async () => {
    const refused = stream(slackNoStreaming);
    refused.onEvent(text("Sales were 1.2M."));
    await refused.finish("Sales were 1.2M.");
    expect(slackNoStreaming.posts.map((p) => p.text)).toEqual(["Sales were 1.2M."]);
    const unclaimed = stream(slack, target, false);
    unclaimed.onEvent(text("Again."));
    await unclaimed.finish("Again.");
    expect(slack.streams).toEqual([]);
    expect(slack.posts.map((p) => p.text)).toEqual(["Again."]);
  });

  it("ends a started stream with the failure, and posts the failure when nothing was streamed", async () => {
    const streamed = stream();
    streamed.onEvent(text("Partial"));
    await streamed.fail(new Error("model down"));
    expect(slack.streams[0].stopped).toBe(true);
    expect(slack.streams[0].pieces.join("")).toMatch(/^Partial\n\n.+/);
    const silent = stream(slackNoStreaming);
    await silent.fail(new Error("model down"));
    expect(slackNoStreaming.posts).toHaveLength(1);
  });

  it("stops a started stream without posting when the attempt is abandoned", async () => {
    const answer = stream();
    answer.onEvent(text("Partial"));
    await answer.abandon();
    expect(slack.streams[0].stopped).toBe(true);
    expect(slack.posts).toEqual([]);
  });
});
