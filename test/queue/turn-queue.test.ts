import type { TurnJob } from "../../lib/queue/index.js";
import { turnIdForJob, turnJobDeduplicationId, turnJobGroupId } from "../../lib/queue/index.js";
import { slackPrincipal, tenantOwner } from "../../lib/auth/principal.js";

function job(overrides: Partial<TurnJob> = {}): TurnJob {
  return {
    channel: "slack",
    conversationKey: "T1:C1:1700000000.000100",
    principal: slackPrincipal("T1", "U1"),
    owner: tenantOwner("slack", "T1"),
    readScope: "slack:T1:C1",
    content: "hi",
    dedupeId: "Ev001",
    receivedAt: new Date(0).toISOString(),
    replyTo: { teamId: "T1", channelId: "C1", threadTs: "1700000000.000100" },
    ...overrides,
  } as TurnJob;
}

describe("turn-queue", () => {
  describe("turnJobGroupId", () => {
    it("returns one group per conversation, within SQS's 128 characters", () => {
      const long = `19:${"x".repeat(300)}@thread.tacv2`;
      expect(turnJobGroupId(job({ dedupeId: "Ev1" }))).toBe(turnJobGroupId(job({ dedupeId: "Ev2" })));
      expect(turnJobGroupId(job({ conversationKey: "other" }))).not.toBe(turnJobGroupId(job()));
      expect(turnJobGroupId(job({ conversationKey: long }))).toMatch(/^[0-9a-f]{1,128}$/);
    });
  });

  describe("turnJobDeduplicationId", () => {
    it("returns the same id for a retried event and another for a new one", () => {
      expect(turnJobDeduplicationId(job())).toBe(turnJobDeduplicationId(job({ receivedAt: new Date(5).toISOString() })));
      expect(turnJobDeduplicationId(job({ dedupeId: "Ev002" }))).not.toBe(turnJobDeduplicationId(job()));
    });
  });

  describe("turnIdForJob", () => {
    it("returns the API's turn id for an API job", () => {
      expect(turnIdForJob(job({ channel: "api", dedupeId: "6f1c1f39-1a1b-4c1d-8e1f-000000000001" } as Partial<TurnJob>))).toBe(
        "6f1c1f39-1a1b-4c1d-8e1f-000000000001",
      );
    });

    it("returns a stable UUID-shaped id per channel event", () => {
      const id = turnIdForJob(job());
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(turnIdForJob(job())).toBe(id);
      expect(turnIdForJob(job({ dedupeId: "Ev002" }))).not.toBe(id);
    });
  });
});
