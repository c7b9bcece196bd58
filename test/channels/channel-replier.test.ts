import { ChannelDeliveryError } from "../../lib/errors.js";
import { ChannelReplier, SlackReplier } from "../../lib/channels/index.js";
import type { TurnJob } from "../../lib/queue/index.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../support/slack-api-endpoint.js";
import { apiPrincipal, slackPrincipal, teamsPrincipal } from "../../lib/auth/principal.js";

const base = {
  conversationKey: "k",
  owner: apiPrincipal("u"),
  readScope: "s",
  content: "hello",
  dedupeId: "d",
  receivedAt: "2026-03-01T12:00:00.000Z",
};
const slackJob: TurnJob = { ...base, channel: "slack", principal: slackPrincipal("T1", "U1"), replyTo: { teamId: "T1", channelId: "C1", threadTs: "1.1" } };
const teamsJob: TurnJob = {
  ...base,
  channel: "teams",
  principal: teamsPrincipal("t1", "u1"),
  replyTo: { serviceUrl: "http://127.0.0.1:9/", conversationId: "a:1", activityId: "1", botId: "28:b", userId: "29:u" },
};

describe("channel-replier", () => {
  let slack: SlackApiEndpoint;
  beforeEach(async () => {
    slack = await startSlackApiEndpoint({ botToken: "xoxb-t" });
  });
  afterEach(async () => slack.close());

  describe("reply", () => {
    it("posts a Slack job's answer through the Slack replier", async () => {
      const replier = new ChannelReplier({ slack: new SlackReplier({ botToken: "xoxb-t", slackApiUrl: slack.slackApiUrl, retries: 0 }) });
      await replier.reply(slackJob, "answer");
      expect(slack.posts).toMatchObject([{ channel: "C1", threadTs: "1.1", text: "answer" }]);
    });

    it("posts nothing for an API job, which the API response answers", async () => {
      const replier = new ChannelReplier({ slack: new SlackReplier({ botToken: "xoxb-t", slackApiUrl: slack.slackApiUrl, retries: 0 }) });
      await replier.reply({ ...base, channel: "api", principal: apiPrincipal("u"), roles: [] }, "answer");
      expect(slack.calls).toHaveLength(0);
    });

    it("throws ChannelDeliveryError for a Teams job when Teams is not configured", async () => {
      await expect(new ChannelReplier({}).reply(teamsJob, "answer")).rejects.toBeInstanceOf(ChannelDeliveryError);
    });
  });
});
