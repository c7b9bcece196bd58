import { ValidationError } from "../../../lib/errors.js";
import { parseTeamsActivity, stripTeamsMention, teamsTurnJob, type TeamsDelivery } from "../../../lib/channels/index.js";
import { turnJobSchema } from "../../../lib/queue/index.js";
import { expectLinearWork, LINEAR_WORK_TIMEOUT_MS } from "../../support/linear-work.js";
import { BOT_ACCOUNT, CHANNEL_THREAD, PERSONAL_CONVERSATION, TENANT, USER_AAD, USER_ACCOUNT, channelMention, messageActivity } from "./fixtures.js";

const SERVICE_URL = "https://smba.trafficmanager.net/amer/";

function message(delivery: TeamsDelivery) {
  if (delivery.kind !== "message") throw new Error(`expected a message, got ${JSON.stringify(delivery)}`);
  return delivery.message;
}

describe("teams/teams-activity", () => {
  describe("parseTeamsActivity", () => {
    it(
      "parses in time linear in the activity, whatever the text holds",
      () => {
        expectLinearWork((text) => parseTeamsActivity(channelMention(SERVICE_URL, { text: `<at>Threadwise</at> ${text}` })));
      },
      LINEAR_WORK_TIMEOUT_MS,
    );

    it("returns a personal chat message with its text", () => {
      const m = message(parseTeamsActivity(messageActivity(SERVICE_URL)));
      expect(m).toMatchObject({ text: "what were last month's sales?", conversationId: PERSONAL_CONVERSATION, tenantId: TENANT });
    });

    it("returns a channel message without the bot's <at> mention", () => {
      expect(message(parseTeamsActivity(channelMention(SERVICE_URL))).text).toBe("and the month before?");
    });

    it.each([
      "conversationUpdate",
      "typing",
      "messageReaction",
      "invoke",
      "installationUpdate",
      "messageUpdate",
      "messageDelete",
      "event",
      "endOfConversation",
    ])("ignores a %s activity", (type) => {
      expect(parseTeamsActivity(messageActivity(SERVICE_URL, { type }))).toEqual({ kind: "ignore", reason: "not_message" });
    });

    it("ignores a message from the bot itself", () => {
      const activity = messageActivity(SERVICE_URL, { from: { id: BOT_ACCOUNT, name: "Threadwise" } });
      expect(parseTeamsActivity(activity)).toEqual({ kind: "ignore", reason: "own_message" });
    });

    it("ignores a message that is only a mention of the bot", () => {
      expect(parseTeamsActivity(channelMention(SERVICE_URL, { text: "<at>Threadwise</at>&nbsp;" }))).toEqual({ kind: "ignore", reason: "empty" });
    });

    it("throws ValidationError for a body that is not an activity", () => {
      expect(() => parseTeamsActivity({ type: "message", text: "hi" })).toThrow(ValidationError);
    });
  });

  describe("stripTeamsMention", () => {
    it("returns other people's mentions untouched", () => {
      const activity = channelMention(SERVICE_URL, { text: "<at>Threadwise</at> ask <at>Bob</at> about it" });
      expect(message(parseTeamsActivity(activity)).text).toBe("ask <at>Bob</at> about it");
    });

    it("returns the text without the bot's mention when the entities are absent", () => {
      expect(stripTeamsMention({ text: "<at>Threadwise</at> hello", recipient: { id: BOT_ACCOUNT, name: "Threadwise" } })).toBe("hello");
    });
  });

  describe("teamsTurnJob", () => {
    const at = new Date("2026-03-01T12:00:00Z");

    it("returns the Teams conversation id as the conversation key", () => {
      const job = teamsTurnJob(message(parseTeamsActivity(channelMention(SERVICE_URL))), at);
      expect(job.conversationKey).toBe(`teams:${CHANNEL_THREAD}`);
    });

    it("returns the channel, without the thread's message id, as the read scope", () => {
      const job = teamsTurnJob(message(parseTeamsActivity(channelMention(SERVICE_URL))), at);
      expect(job.readScope).toBe("teams:19:abcdef0123456789@thread.tacv2");
    });

    it("returns the Entra object id as a Teams principal of the tenant, and the tenant as owner", () => {
      const job = teamsTurnJob(message(parseTeamsActivity(messageActivity(SERVICE_URL))), at);
      expect(job.principal).toEqual({ issuer: "teams", tenant: TENANT, subject: USER_AAD });
      expect(job.owner).toEqual({ issuer: "teams", tenant: TENANT, subject: null });
    });

    it("refuses a message without channelData's tenant, rather than take the conversation's", () => {
      expect(parseTeamsActivity(messageActivity(SERVICE_URL, { channelData: {} }))).toEqual({ kind: "refused", reason: "no_tenant" });
    });

    it("refuses a message without an Entra object id, rather than map it to the channel account id the client chose", () => {
      const lead = "6f0c0000-0000-4000-8000-0000000000c3";
      const activity = messageActivity(SERVICE_URL, { from: { id: lead, name: "Lead" } });
      expect(parseTeamsActivity(activity)).toEqual({ kind: "refused", reason: "no_object_id" });
    });

    it("refuses a message whose conversation belongs to another tenant (a user of another organisation in a shared channel)", () => {
      const activity = messageActivity(SERVICE_URL, { conversation: { conversationType: "channel", tenantId: "another-tenant", id: CHANNEL_THREAD } });
      expect(parseTeamsActivity(activity)).toEqual({ kind: "refused", reason: "other_tenant" });
    });

    it("returns a job that the queue schema accepts, addressed back to the activity", () => {
      const activity = messageActivity(SERVICE_URL, { id: "1700000000999" });
      const job = teamsTurnJob(message(parseTeamsActivity(activity)), at);
      expect(turnJobSchema.parse(JSON.parse(JSON.stringify(job)))).toEqual(JSON.parse(JSON.stringify(job)));
      expect(job.replyTo).toEqual({
        serviceUrl: SERVICE_URL,
        conversationId: PERSONAL_CONVERSATION,
        activityId: "1700000000999",
        botId: BOT_ACCOUNT,
        botName: "Threadwise",
        userId: USER_ACCOUNT,
        tenantId: TENANT,
        conversationType: "personal",
      });
      expect(job.dedupeId).toBe(`teams:${PERSONAL_CONVERSATION}:1700000000999`);
    });
  });
});
