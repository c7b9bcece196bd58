import { ValidationError } from "../../lib/errors.js";
import { parseTurnJob, turnJobIds, type TurnJob } from "../../lib/channels/index.js";

const slackJob: TurnJob = {
  channel: "slack",
  conversationKey: "slack:T1:C1:1.1",
  caller: { userId: "slack:T1:U1", tenantId: "slack:T1", roles: [] },
  owner: { userId: "slack:T1", tenantId: "slack:T1", roles: [] },
  readScope: "slack:T1:C1",
  content: "hello",
  dedupeId: "slack:Ev1",
  receivedAt: "2026-03-01T12:00:00.000Z",
  replyTo: { teamId: "T1", channelId: "C1", threadTs: "1.1" },
};

describe("turn-job", () => {
  describe("parseTurnJob", () => {
    it("returns the job the ingress serialised", () => {
      expect(parseTurnJob(JSON.stringify(slackJob))).toEqual(slackJob);
    });

    it("returns an api job, which has no reply target", () => {
      const { replyTo: _, ...rest } = slackJob;
      const api = { ...rest, channel: "api" };
      expect(parseTurnJob(JSON.stringify(api))).toEqual(api);
    });

    it("throws ValidationError for a Slack job without its reply thread", () => {
      const { replyTo: _, ...rest } = slackJob;
      expect(() => parseTurnJob(JSON.stringify(rest))).toThrow(ValidationError);
    });

    it("throws ValidationError for a Teams job whose serviceUrl is not a URL", () => {
      const teams = {
        ...slackJob,
        channel: "teams",
        replyTo: { serviceUrl: "smba", conversationId: "a:1", activityId: "1", botId: "28:b", userId: "29:u" },
      };
      const error = (() => {
        try {
          parseTurnJob(JSON.stringify(teams));
        } catch (e) {
          return e;
        }
      })();
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).details?.map((d) => d.path)).toContain("replyTo.serviceUrl");
    });

    it("throws ValidationError for empty content", () => {
      expect(() => parseTurnJob(JSON.stringify({ ...slackJob, content: "" }))).toThrow(ValidationError);
    });

    it("throws ValidationError for a body that is not JSON", () => {
      expect(() => parseTurnJob("{")).toThrow(ValidationError);
    });
  });
});

describe("turn-job ids", () => {
  describe("turnJobIds", () => {
    const teamsJob: TurnJob = {
      ...slackJob,
      channel: "teams",
      conversationKey: `teams:19:${"x".repeat(200)}@thread.tacv2;messageid=1700000000123`,
      dedupeId: `teams:19:${"x".repeat(200)}@thread.tacv2;messageid=1700000000123:1700000000999`,
      replyTo: { serviceUrl: "https://smba.trafficmanager.net/amer/", conversationId: "19:x", activityId: "1", botId: "28:b", userId: "29:u" },
    };

    it("returns SQS ids within 128 characters of SQS's alphabet, even for long Teams ids", () => {
      const ids = turnJobIds(teamsJob);
      for (const id of [ids.messageGroupId, ids.messageDeduplicationId]) expect(id).toMatch(/^[0-9a-f]{1,128}$/);
    });

    it("returns the same ids for every delivery of one event", () => {
      expect(turnJobIds({ ...slackJob, receivedAt: "2026-03-01T12:04:00.000Z" })).toEqual(turnJobIds(slackJob));
    });

    it("returns one group for two events of one conversation, and different turn ids", () => {
      const other = turnJobIds({ ...slackJob, dedupeId: "slack:Ev2" });
      expect(other.messageGroupId).toBe(turnJobIds(slackJob).messageGroupId);
      expect(other.turnId).not.toBe(turnJobIds(slackJob).turnId);
    });

    it("returns a turn id shaped as a UUID", () => {
      expect(turnJobIds(slackJob).turnId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    });
  });
});
