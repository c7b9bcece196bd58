import { BotConnectorTokenProvider, TeamsReplier } from "../../../lib/channels/index.js";
import type { TeamsReplyTarget } from "../../../lib/queue/index.js";
import type { TurnEvent, TurnEventBody } from "../../../lib/events/turn-event-types.js";
import { startBotConnectorEndpoint, type BotConnectorEndpoint } from "../../support/bot-connector-endpoint.js";
import { ManualClock } from "../../support/manual-clock.js";
import { TEST_APP_ID } from "../../support/teams-signing.js";
import { BOT_ACCOUNT, PERSONAL_CONVERSATION, TENANT, USER_ACCOUNT } from "./fixtures.js";

const APP_PASSWORD = "test-client-secret";

describe("teams/teams-answer-stream", () => {
  let connector: BotConnectorEndpoint;
  let clock: ManualClock;
  let target: TeamsReplyTarget;
  beforeEach(async () => {
    connector = await startBotConnectorEndpoint({ appId: TEST_APP_ID, appPassword: APP_PASSWORD, streaming: true });
    clock = new ManualClock();
    target = {
      serviceUrl: connector.serviceUrl,
      conversationId: PERSONAL_CONVERSATION,
      activityId: "1700000000999",
      botId: BOT_ACCOUNT,
      userId: USER_ACCOUNT,
      tenantId: TENANT,
      conversationType: "personal",
    };
  });
  afterEach(async () => connector.close());

  function replier(): TeamsReplier {
    const tokens = new BotConnectorTokenProvider({ appId: TEST_APP_ID, appPassword: APP_PASSWORD, tokenUrl: connector.tokenUrl });
    return new TeamsReplier({ tokens, streamIntervalMs: 0, clock });
  }

  let id = 0;
  const event = (body: TurnEventBody) => ({ ...body, id: ++id }) as TurnEvent;
  const streamInfo = (i: number) => (connector.replies[i].activity.entities as Record<string, unknown>[])[0];

  describe("openStream", () => {
    it("returns undefined for a group chat or channel, which take one message", () => {
      expect(replier().openStream({ ...target, conversationType: "groupChat" }, async () => true)).toBeUndefined();
      expect(replier().openStream({ ...target, conversationType: "channel" }, async () => true)).toBeUndefined();
    });
  });

  describe("finish", () => {
    it("sends an informative update while a tool runs, the text so far, and a final message closing the stream", async () => {
      const stream = replier().openStream(target, async () => true)!;
      stream.onEvent(event({ type: "progress", step: "model", modelCall: 0 }));
      stream.onEvent(event({ type: "tool_started", tool: "sql_query", toolCallId: "t1" }));
      stream.onEvent(event({ type: "text", modelCall: 1, delta: "Sales " }));
      stream.onEvent(event({ type: "text", modelCall: 1, delta: "rose." }));
      await stream.finish("Sales rose.");
      const activities = connector.replies.map((r) => r.activity);
      expect(activities.map((a) => a.type)).toEqual([...Array(activities.length - 1).fill("typing"), "message"]);
      expect(activities[0]).toMatchObject({ text: "Thinking…", entities: [{ type: "streaminfo", streamType: "informative", streamSequence: 1 }] });
      expect(streamInfo(0)).not.toHaveProperty("streamId");
      expect(activities[1]).toMatchObject({ text: "Running sql_query…", entities: [{ streamId: "reply-1", streamType: "informative", streamSequence: 2 }] });
      const streaming = activities.filter((a) => (a.entities as { streamType: string }[])[0].streamType === "streaming");
      expect(streaming.length).toBeGreaterThan(0);
      expect(streaming.at(-1)!.text).toBe("Sales rose.");
      expect(activities.at(-1)).toMatchObject({ text: "Sales rose.", entities: [{ type: "streaminfo", streamId: "reply-1", streamType: "final" }] });
      expect(activities.every((a) => a.replyToId === target.activityId && (a.recipient as { id: string }).id === USER_ACCOUNT)).toBe(true);
    });

    it("sends the answer as a new message once the stream is past the two-minute limit", async () => {
      const stream = replier().openStream(target, async () => true)!;
      stream.onEvent(event({ type: "progress", step: "model", modelCall: 0 }));
      stream.onEvent(event({ type: "tool_started", tool: "slow_report", toolCallId: "t1" }));
      await expect.poll(() => connector.replies.length).toBe(2);
      clock.pause(121_000);
      stream.onEvent(event({ type: "text", modelCall: 1, delta: "Late answer." }));
      await stream.finish("Late answer.");
      const last = connector.replies.at(-1)!.activity;
      expect(last).toMatchObject({ type: "message", text: "Late answer." });
      expect(last).not.toHaveProperty("entities");
      expect(connector.replies.filter((r) => (r.activity.entities as { streamType?: string }[] | undefined)?.[0]?.streamType === "streaming")).toEqual([]);
    });

    it("sends one message when Teams refuses the stream", async () => {
      await connector.close();
      connector = await startBotConnectorEndpoint({ appId: TEST_APP_ID, appPassword: APP_PASSWORD, streaming: false });
      target.serviceUrl = connector.serviceUrl;
      const stream = replier().openStream(target, async () => true)!;
      stream.onEvent(event({ type: "progress", step: "model", modelCall: 0 }));
      stream.onEvent(event({ type: "text", modelCall: 0, delta: "Whole answer." }));
      await stream.finish("Whole answer.");
      expect(connector.replies.map((r) => r.activity)).toEqual([expect.objectContaining({ type: "message", text: "Whole answer." })]);
    });

    it("sends one message when another attempt already streamed the turn", async () => {
      const stream = replier().openStream(target, async () => false)!;
      stream.onEvent(event({ type: "progress", step: "model", modelCall: 0 }));
      stream.onEvent(event({ type: "text", modelCall: 0, delta: "Once." }));
      await stream.finish("Once.");
      expect(connector.replies.map((r) => r.activity)).toEqual([expect.not.objectContaining({ entities: expect.anything() })]);
      expect(connector.replies[0].activity.text).toBe("Once.");
    });
  });
});
