import { ChannelDeliveryError, ContextBudgetExceededError } from "../../../lib/errors.js";
import { BotConnectorTokenProvider, TeamsReplier } from "../../../lib/channels/index.js";
import type { TeamsReplyTarget } from "../../../lib/queue/index.js";
import { startBotConnectorEndpoint, type BotConnectorEndpoint } from "../../support/bot-connector-endpoint.js";
import { TEST_APP_ID } from "../../support/teams-signing.js";
import { BOT_ACCOUNT, CHANNEL_THREAD, TENANT, USER_ACCOUNT } from "./fixtures.js";

const APP_PASSWORD = "test-client-secret";

describe("teams/teams-replier", () => {
  let connector: BotConnectorEndpoint;
  let target: TeamsReplyTarget;
  beforeEach(async () => {
    connector = await startBotConnectorEndpoint({ appId: TEST_APP_ID, appPassword: APP_PASSWORD });
    target = {
      serviceUrl: connector.serviceUrl,
      conversationId: CHANNEL_THREAD,
      activityId: "1700000000123",
      botId: BOT_ACCOUNT,
      botName: "Threadwise",
      userId: USER_ACCOUNT,
      tenantId: TENANT,
    };
  });
  afterEach(async () => connector.close());

  function replier(options: { appPassword?: string; tenant?: string; maxMessageChars?: number } = {}): TeamsReplier {
    const tokens = new BotConnectorTokenProvider({
      appId: TEST_APP_ID,
      appPassword: options.appPassword ?? APP_PASSWORD,
      tenant: options.tenant,
      tokenUrl: connector.tokenUrl,
    });
    return new TeamsReplier({ tokens, maxMessageChars: options.maxMessageChars });
  }

  describe("reply", () => {
    it("posts the answer as a reply to the activity, in its conversation", async () => {
      const ids = await replier().reply(target, "Sales were **1.2M**.");
      expect(ids).toEqual(["reply-1"]);
      expect(connector.replies).toHaveLength(1);
      const [reply] = connector.replies;
      expect(reply.conversationId).toBe(CHANNEL_THREAD);
      expect(reply.activityId).toBe("1700000000123");
      expect(reply.activity).toMatchObject({
        type: "message",
        text: "Sales were **1.2M**.",
        textFormat: "markdown",
        replyToId: "1700000000123",
        from: { id: BOT_ACCOUNT },
        recipient: { id: USER_ACCOUNT },
        conversation: { id: CHANNEL_THREAD },
      });
    });

    it("asks for a token for the Bot Connector scope from the botframework.com tenant by default", async () => {
      await replier().reply(target, "hi");
      expect(connector.tokenRequests).toEqual([{ tenant: "botframework.com", clientId: TEST_APP_ID, scope: "https://api.botframework.com/.default" }]);
    });

    it("asks the bot's own tenant for a token when it is a single-tenant bot", async () => {
      await replier({ tenant: TENANT }).reply(target, "hi");
      expect(connector.tokenRequests.map((r) => r.tenant)).toEqual([TENANT]);
    });

    it("reuses the cached token for later replies", async () => {
      const r = replier();
      await r.reply(target, "one");
      await r.reply(target, "two");
      await Promise.all([r.reply(target, "three"), r.reply(target, "four")]);
      expect(connector.replies).toHaveLength(4);
      expect(connector.tokenRequests).toHaveLength(1);
    });

    it("fetches a fresh token once when the Bot Connector refuses the cached one", async () => {
      const r = replier();
      await r.reply(target, "one");
      connector.revokeTokens();
      await r.reply(target, "two");
      expect(connector.replies.map((x) => x.activity.text)).toEqual(["one", "two"]);
      expect(connector.tokenRequests).toHaveLength(2);
    });

    it("posts a long answer as several replies, none over the limit", async () => {
      const text = Array.from({ length: 6 }, (_, i) => `Paragraph ${i}: ${"lorem ipsum ".repeat(20)}`).join("\n\n");
      await replier({ maxMessageChars: 400 }).reply(target, text);
      expect(connector.replies.length).toBeGreaterThan(1);
      expect(connector.replies.every((x) => String(x.activity.text).length <= 400)).toBe(true);
    });

    it("throws ChannelDeliveryError with 401 when the app secret is wrong", async () => {
      await expect(replier({ appPassword: "wrong" }).reply(target, "hi")).rejects.toMatchObject({
        name: "ChannelDeliveryError",
        channel: "teams",
        status: 401,
      });
      expect(connector.replies).toHaveLength(0);
    });

    it("throws ChannelDeliveryError with the status when the Bot Connector fails", async () => {
      connector.failNextReply(503);
      const error = await replier()
        .reply(target, "hi")
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ChannelDeliveryError);
      expect((error as ChannelDeliveryError).status).toBe(503);
    });
  });

  describe("replyFailure", () => {
    it("posts a short, honest failure message as a reply to the activity", async () => {
      await replier().replyFailure(target, new ContextBudgetExceededError("too long", 24_000, 30_000));
      expect(connector.replies).toHaveLength(1);
      expect(connector.replies[0].activityId).toBe("1700000000123");
      expect(connector.replies[0].activity.text).toBe(
        "This conversation has grown too long for me to answer in. Please start a new conversation and ask again.",
      );
    });
  });
});
