import { ValidationError } from "../../lib/errors.js";
import { parseTurnJob, recoveryJobOf, type TurnJob } from "../../lib/queue/index.js";
import { apiPrincipal, slackPrincipal, teamsPrincipal, tenantOwner } from "../../lib/auth/principal.js";

const slackJob: TurnJob = {
  channel: "slack",
  conversationKey: "slack:T1:C1:1.1",
  principal: slackPrincipal("T1", "U1"),
  owner: tenantOwner("slack", "T1"),
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

    it("returns the trace context a job carries, and throws ValidationError for one with more than 8 fields or a field name that is no header", () => {
      const traced = { ...slackJob, trace: { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" } };
      expect(parseTurnJob(JSON.stringify(traced))).toEqual(traced);
      const many = Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`k${i}`, "v"]));
      expect(() => parseTurnJob(JSON.stringify({ ...slackJob, trace: many }))).toThrow(ValidationError);
      expect(() => parseTurnJob(JSON.stringify({ ...slackJob, trace: { "trace parent": "x" } }))).toThrow(ValidationError);
    });

    it("returns an api job, which has no reply target and carries its token's roles", () => {
      const { replyTo: _, ...rest } = slackJob;
      const api = { ...rest, channel: "api", principal: apiPrincipal("alice", "acme"), owner: apiPrincipal("alice", "acme"), roles: ["analyst"] };
      expect(parseTurnJob(JSON.stringify(api))).toEqual(api);
    });

    it("throws ValidationError for a job whose writer is a principal of another issuer than its channel", () => {
      // An API principal riding a Slack job, or a Slack principal an API job: neither may be turned into the other.
      expect(() => parseTurnJob(JSON.stringify({ ...slackJob, principal: apiPrincipal("U1", "T1") }))).toThrow(ValidationError);
      const { replyTo: _, ...rest } = slackJob;
      expect(() => parseTurnJob(JSON.stringify({ ...rest, channel: "api", roles: [] }))).toThrow(ValidationError);
      expect(() => parseTurnJob(JSON.stringify({ ...slackJob, principal: teamsPrincipal("T1", "U1") }))).toThrow(ValidationError);
    });

    it("throws ValidationError for a job in the shape before principals", () => {
      const { principal: _, ...rest } = slackJob;
      const old = {
        ...rest,
        caller: { userId: "slack:T1:U1", tenantId: "slack:T1", roles: [] },
        owner: { userId: "slack:T1", tenantId: "slack:T1", roles: [] },
      };
      expect(() => parseTurnJob(JSON.stringify(old))).toThrow(ValidationError);
    });

    it("throws ValidationError for an API owner without a subject", () => {
      const { replyTo: _, ...rest } = slackJob;
      const api = { ...rest, channel: "api", principal: apiPrincipal("alice"), owner: { issuer: "api", tenant: "acme", subject: null }, roles: [] };
      expect(() => parseTurnJob(JSON.stringify(api))).toThrow(ValidationError);
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

  describe("recoveryJobOf", () => {
    it("returns the origin's job without the trace context of the request that first queued it", () => {
      const origin = { ...slackJob, trace: { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" } };
      const job = recoveryJobOf({ _id: "t1", attempt: 2, origin });
      expect(job.trace).toBeUndefined();
      expect(job).toEqual({ ...slackJob, resume: "recovery-2" });
    });
  });
});
