import fc from "fast-check";
import { ValidationError } from "../../../lib/errors.js";
import { parseSlackEvent, slackTurnJob, stripSlackMention, type SlackDelivery } from "../../../lib/channels/index.js";
import { turnJobSchema } from "../../../lib/queue/index.js";
import { expectLinearWork, LINEAR_WORK_TIMEOUT_MS } from "../../support/linear-work.js";
import { BOT_USER, CHANNEL, DM, TEAM, USER, appMention, directMessage, envelope } from "./fixtures.js";

function message(delivery: SlackDelivery) {
  if (delivery.kind !== "message") throw new Error(`expected a message, got ${JSON.stringify(delivery)}`);
  return delivery.message;
}

describe("slack/slack-event", () => {
  describe("parseSlackEvent", () => {
    it("returns the challenge of a url_verification", () => {
      const body = JSON.stringify({ token: "x", challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", type: "url_verification" });
      expect(parseSlackEvent(body)).toEqual({ kind: "url_verification", challenge: "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" });
    });

    it("returns an app_mention's text without the bot mention", () => {
      expect(message(parseSlackEvent(envelope(appMention()))).text).toBe("what were last month's sales?");
    });

    it("returns the text with Slack's escapes of &, < and > undone, after the mention is removed", () => {
      const text = `<@${BOT_USER}> spend of R&amp;D where cost &gt; 5 &amp;&amp; &lt;@${BOT_USER}&gt; &amp;lt;`;
      expect(message(parseSlackEvent(envelope(appMention({ text })))).text).toBe(`spend of R&D where cost > 5 && <@${BOT_USER}> &lt;`);
    });

    it("returns the message's own ts as thread root for a top-level mention", () => {
      const m = message(parseSlackEvent(envelope(appMention({ ts: "1700000100.000200" }))));
      expect(m.threadTs).toBe("1700000100.000200");
    });

    it("returns the thread's root for a mention inside a thread", () => {
      const m = message(parseSlackEvent(envelope(appMention({ ts: "1700000900.000900", thread_ts: "1700000100.000200" }))));
      expect(m.threadTs).toBe("1700000100.000200");
      expect(m.ts).toBe("1700000900.000900");
    });

    it("returns a direct message (message.im)", () => {
      const m = message(parseSlackEvent(envelope(directMessage())));
      expect(m).toMatchObject({ teamId: TEAM, channelId: DM, userId: USER, text: "and the month before?" });
    });

    it("returns a file_share message, which carries the user's text", () => {
      expect(message(parseSlackEvent(envelope(directMessage({ subtype: "file_share", text: "see attached" })))).text).toBe("see attached");
    });

    it("ignores a channel message that is not a mention, which app_mention already covers", () => {
      expect(parseSlackEvent(envelope(directMessage({ channel_type: "channel", channel: CHANNEL })))).toEqual({
        kind: "ignore",
        reason: "not_direct_message",
      });
    });

    it("ignores messages that carry a bot_id", () => {
      expect(parseSlackEvent(envelope(directMessage({ bot_id: "B0OTHER" })))).toEqual({ kind: "ignore", reason: "bot_message" });
    });

    it("ignores the bot_message subtype", () => {
      expect(parseSlackEvent(envelope(directMessage({ subtype: "bot_message", user: undefined })))).toEqual({
        kind: "ignore",
        reason: "bot_message",
      });
    });

    it("ignores the bot's own messages, known from the envelope's authorizations", () => {
      expect(parseSlackEvent(envelope(directMessage({ user: BOT_USER })))).toEqual({ kind: "ignore", reason: "own_message" });
    });

    it("ignores the bot's own messages, known from the botUserId option", () => {
      const body = JSON.stringify({ ...JSON.parse(envelope(directMessage({ user: "U0SELF" }))), authorizations: [] });
      expect(parseSlackEvent(body, { botUserId: "U0SELF" })).toEqual({ kind: "ignore", reason: "own_message" });
    });

    it.each(["message_changed", "message_deleted", "channel_join", "channel_topic", "thread_broadcast_removed"])("ignores the %s subtype", (subtype) => {
      expect(parseSlackEvent(envelope(directMessage({ subtype })))).toEqual({ kind: "ignore", reason: "not_user_text" });
    });

    it("ignores a system subtype even when it lacks the fields of a user message", () => {
      expect(parseSlackEvent(envelope({ type: "message", subtype: "message_replied", hidden: true, event_ts: "1.1" }))).toEqual({
        kind: "ignore",
        reason: "not_user_text",
      });
    });

    it("ignores a mention with no question in it", () => {
      expect(parseSlackEvent(envelope(appMention({ text: `  <@${BOT_USER}>  ` })))).toEqual({ kind: "ignore", reason: "empty" });
    });

    it.each([
      { type: "reaction_added", user: USER, reaction: "thumbsup", item: { type: "message", channel: CHANNEL, ts: "1.1" } },
      { type: "member_joined_channel", user: USER, channel: CHANNEL },
      { type: "app_home_opened", user: USER, channel: DM, tab: "home" },
      { type: "app_uninstalled" },
      { type: "tokens_revoked", tokens: { bot: [BOT_USER] } },
      { type: "assistant_thread_started", assistant_thread: { user_id: USER, channel_id: DM, thread_ts: "1.1" } },
      { type: "file_shared", file_id: "F1", user_id: USER, channel_id: CHANNEL },
    ])("ignores a $type event, which it does not handle", (event) => {
      expect(parseSlackEvent(envelope(event))).toEqual({ kind: "ignore", reason: "unsupported_event" });
    });

    it("ignores envelopes it does not handle", () => {
      expect(parseSlackEvent(JSON.stringify({ type: "app_rate_limited", team_id: TEAM, minute_rate_limited: 1 }))).toEqual({
        kind: "ignore",
        reason: "unsupported_envelope",
      });
    });

    it(
      "parses in time linear in the body, whatever the text holds",
      () => {
        // The mention pattern once took 1.3 s on 40,000 spaces, before the three-second acknowledgement.
        expectLinearWork((text) => parseSlackEvent(envelope(appMention({ text: `<@${BOT_USER}> ${text}` }))));
      },
      LINEAR_WORK_TIMEOUT_MS,
    );

    it("throws ValidationError for a body that is not JSON", () => {
      expect(() => parseSlackEvent("token=abc&challenge=x")).toThrow(ValidationError);
    });

    it("throws ValidationError for an event_callback without event_id", () => {
      const body = JSON.stringify({ type: "event_callback", team_id: TEAM, event: appMention() });
      expect(() => parseSlackEvent(body)).toThrow(ValidationError);
    });

    it("throws ValidationError for a message event without channel", () => {
      expect(() => parseSlackEvent(envelope(appMention({ channel: undefined })))).toThrow(ValidationError);
    });
  });

  describe("stripSlackMention", () => {
    it("returns other users' mentions untouched", () => {
      expect(stripSlackMention(`<@${BOT_USER}> ask <@U0BOB|bob> about it`, new Set([BOT_USER]), true)).toBe("ask <@U0BOB|bob> about it");
    });

    it("returns the text without a mention that carries a display name", () => {
      expect(stripSlackMention(`<@${BOT_USER}|threadwise> hello`, new Set([BOT_USER]), true)).toBe("hello");
    });

    it("returns an app_mention's text without its leading mention when the bot id is unknown", () => {
      expect(stripSlackMention("<@U0WHOEVER> hello <@U0BOB>", new Set(), true)).toBe("hello <@U0BOB>");
    });

    it("returns text that never contains the bot's mention and never starts or ends blank", () => {
      const word = fc.constantFrom("sales", "why", "<@U0BOB>", `<@${BOT_USER}>`, `<@${BOT_USER}|tw>`, " ", "\n", "é");
      fc.assert(
        fc.property(fc.array(word, { maxLength: 12 }), (words) => {
          const out = stripSlackMention(words.join(" "), new Set([BOT_USER]), true);
          expect(out).not.toContain(`<@${BOT_USER}`);
          expect(out).toBe(out.trim());
        }),
      );
    });
  });

  describe("slackTurnJob", () => {
    const at = new Date("2026-03-01T12:00:00Z");

    it("returns the same conversation key for every message of one thread", () => {
      const root = slackTurnJob(message(parseSlackEvent(envelope(appMention({ ts: "1.1" })))), at);
      const reply = slackTurnJob(message(parseSlackEvent(envelope(appMention({ ts: "1.9", thread_ts: "1.1" })))), at);
      expect(reply.conversationKey).toBe(root.conversationKey);
    });

    it("returns different conversation keys for two threads of one channel", () => {
      const a = slackTurnJob(message(parseSlackEvent(envelope(appMention({ ts: "1.1" })))), at);
      const b = slackTurnJob(message(parseSlackEvent(envelope(appMention({ ts: "2.2" })))), at);
      expect(a.conversationKey).not.toBe(b.conversationKey);
      expect(a.readScope).toBe(b.readScope);
    });

    it("returns the writer as a Slack principal of the workspace, and the workspace as owner", () => {
      const job = slackTurnJob(message(parseSlackEvent(envelope(appMention()))), at);
      expect(job.principal).toEqual({ issuer: "slack", tenant: TEAM, subject: USER });
      expect(job.owner).toEqual({ issuer: "slack", tenant: TEAM, subject: null });
      expect(job.readScope).toBe(`slack:${TEAM}:${CHANNEL}`);
    });

    it("returns a job that the queue schema accepts, with the reply thread and the message (workspace, channel, ts) as dedupe id", () => {
      const body = envelope(appMention({ ts: "1.9", thread_ts: "1.1" }), "Ev0FIXED");
      const job = slackTurnJob(message(parseSlackEvent(body)), at);
      expect(turnJobSchema.parse(JSON.parse(JSON.stringify(job)))).toEqual(job);
      expect(job.replyTo).toEqual({ teamId: TEAM, channelId: CHANNEL, threadTs: "1.1" });
      expect(job.dedupeId).toBe(`slack:${TEAM}:${CHANNEL}:1.9`);
    });

    it("returns the same dedupe id for the app_mention Slack sends again, under a new event id, when the message is edited", () => {
      const original = slackTurnJob(message(parseSlackEvent(envelope(appMention({ ts: "1.9" }), "Ev0ORIGINAL"))), at);
      const edited = appMention({ ts: "1.9", text: `<@${BOT_USER}> and in EMEA?`, edited: { user: USER, ts: "2.0" } });
      expect(slackTurnJob(message(parseSlackEvent(envelope(edited, "Ev0EDITED"))), at).dedupeId).toBe(original.dedupeId);
    });
  });
});
