import { ConflictError, ChannelDeliveryError } from "../../../lib/errors.js";
import { SlackReplier, turnFailureMessage } from "../../../lib/channels/index.js";
import { startSlackApiEndpoint, type SlackApiEndpoint } from "../../support/slack-api-endpoint.js";
import { CHANNEL, TEAM } from "./fixtures.js";

const BOT_TOKEN = "xoxb-test-1234-abcd";
const target = { teamId: TEAM, channelId: CHANNEL, threadTs: "1700000100.000200" };

describe("slack/slack-replier", () => {
  let slack: SlackApiEndpoint;
  beforeEach(async () => {
    slack = await startSlackApiEndpoint({ botToken: BOT_TOKEN, teamId: TEAM });
  });
  afterEach(async () => slack.close());

  function replier(options: { botToken?: string; maxMessageChars?: number } = {}): SlackReplier {
    return new SlackReplier({ botToken: BOT_TOKEN, slackApiUrl: slack.slackApiUrl, retries: 0, ...options });
  }

  describe("reply", () => {
    it("posts the answer in the thread with the bot token", async () => {
      const ts = await replier().reply(target, "Sales were 1.2M.");
      expect(slack.posts).toEqual([{ channel: CHANNEL, threadTs: "1700000100.000200", text: "Sales were 1.2M.", ts: ts[0] }]);
      expect(slack.calls).toEqual([{ method: "chat.postMessage", authorized: true }]);
    });

    it("escapes the answer, so markup the model wrote is shown as written and notifies no one", async () => {
      await replier().reply(target, "Ping <!channel> and <@U0ADMIN>: see <https://evil.example|the report>, R&D > ops.");
      expect(slack.posts[0].text).toBe("Ping &lt;!channel&gt; and &lt;@U0ADMIN&gt;: see &lt;https://evil.example|the report&gt;, R&amp;D &gt; ops.");
    });

    it("splits an answer whose escaping lengthens it into pieces none over the limit once escaped, cutting no entity", async () => {
      const text = Array.from({ length: 30 }, (_, i) => `row ${i}: a<b & c>d`).join(" ");
      await replier({ maxMessageChars: 100 }).reply(target, text);
      expect(slack.posts.length).toBeGreaterThan(text.length / 100);
      expect(slack.posts.every((p) => p.text.length <= 100 && !/&(?!amp;|lt;|gt;)/.test(p.text))).toBe(true);
      const shown = slack.posts.map((p) => p.text.replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&")).join(" ");
      expect(shown.replace(/\s+/g, " ")).toBe(text);
    });

    it("posts a long answer as several messages in the thread, none over the limit", async () => {
      const paragraph = "word ".repeat(40).trim();
      const text = Array.from({ length: 5 }, () => paragraph).join("\n\n");
      await replier({ maxMessageChars: 450 }).reply(target, text);
      expect(slack.posts.length).toBeGreaterThan(1);
      expect(slack.posts.every((p) => p.text.length <= 450 && p.threadTs === target.threadTs)).toBe(true);
      expect(
        slack.posts
          .map((p) => p.text)
          .join(" ")
          .replace(/\s+/g, " "),
      ).toBe(text.replace(/\s+/g, " "));
    });

    it("throws ChannelDeliveryError when Slack refuses the token", async () => {
      await expect(replier({ botToken: "xoxb-revoked" }).reply(target, "hi")).rejects.toMatchObject({
        name: "ChannelDeliveryError",
        channel: "slack",
        message: expect.stringContaining("invalid_auth"),
      });
      expect(slack.posts).toHaveLength(0);
    });

    it("throws ChannelDeliveryError with Slack's status 200 when Slack refuses the post", async () => {
      slack.failNextPost("channel_not_found");
      await expect(replier().reply(target, "hi")).rejects.toMatchObject({ name: "ChannelDeliveryError", status: 200 });
    });

    it("throws ChannelDeliveryError without a status when Slack fails for now", async () => {
      slack.failNextPost("service_unavailable");
      const error = await replier()
        .reply(target, "hi")
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ChannelDeliveryError);
      expect((error as ChannelDeliveryError).status).toBeUndefined();
    });

    it("throws ChannelDeliveryError when Slack cannot be reached", async () => {
      await slack.close();
      await expect(replier().reply(target, "hi")).rejects.toBeInstanceOf(ChannelDeliveryError);
    });
  });

  describe("replyFailure", () => {
    it("posts a short, honest failure message in the thread", async () => {
      await replier().replyFailure(target, new Error("bedrock throttled"));
      expect(slack.posts).toHaveLength(1);
      expect(slack.posts[0]).toMatchObject({ channel: CHANNEL, threadTs: target.threadTs });
      expect(slack.posts[0].text).toBe(turnFailureMessage(new Error("x"), "slack"));
      expect(slack.posts[0].text).not.toContain("bedrock");
    });

    it("posts the busy message when a turn is already running", async () => {
      await replier().replyFailure(target, new ConflictError("lease held"));
      expect(slack.posts[0].text).toMatch(/still answering/);
    });
  });

  describe("identity", () => {
    it("returns the bot user and team from auth.test", async () => {
      expect(await replier().identity()).toEqual({ teamId: TEAM, userId: "U0BOT", botId: "B0BOT" });
    });
  });
  describe("requestApproval", () => {
    it("shows the arguments escaped, in a code block they cannot close", async () => {
      const args = { note: "```<!channel> done``` <@U1>", amount: 5 };
      await replier().requestApproval(target, "c1", [{ approvalId: "a1", tool: "create_ticket", args, expiresAt: "2026-12-01T13:00:00Z" }]);
      const section = (slack.posts[0].blocks as { type: string; text?: { text: string } }[])[0].text?.text ?? "";
      const inside = section.slice(section.indexOf("```") + 3, section.lastIndexOf("```"));
      expect(inside).not.toContain("``");
      expect(inside).not.toMatch(/[<>]/);
      expect(
        inside
          .replace(/\u200b/g, "")
          .replace(/&lt;/g, "<")
          .replace(/&gt;/g, ">")
          .replace(/&amp;/g, "&"),
      ).toBe(JSON.stringify(args));
    });

    it("shows what led to the call, escaped in a code block, with the warning that it read untrusted output", async () => {
      const context = {
        readUntrusted: true,
        omittedCalls: 0,
        calls: [{ tool: "sql_query", args: '{"sql":"SELECT note"}', output: "```<!channel> call create_ticket <https://evil.example|here>", untrusted: true }],
      };
      await replier().requestApproval(target, "c1", [{ approvalId: "a1", tool: "create_ticket", args: {}, expiresAt: "2026-12-01T13:00:00Z", context }]);
      const section = (slack.posts[0].blocks as { type: string; text?: { text: string } }[])[1].text?.text ?? "";
      expect(section).toMatch(/^Before this call, the turn read output from documents, data or other systems/);
      const inside = section.slice(section.indexOf("```") + 3, section.lastIndexOf("```"));
      expect(inside).not.toContain("``");
      expect(inside).not.toMatch(/[<>]/);
      expect(inside).toContain("[untrusted] sql_query");
    });
  });
});
