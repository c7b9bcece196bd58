import type { TurnJob } from "../../lib/queue/index.js";
import { turnIdForJob, turnJobDeduplicationId, turnJobGroupId } from "../../lib/queue/index.js";
import { sampleSlackJob } from "../support/turn-jobs.js";

describe("turn-queue", () => {
  describe("turnJobGroupId", () => {
    it("returns one group per conversation, within SQS's 128 characters", () => {
      const long = `19:${"x".repeat(300)}@thread.tacv2`;
      expect(turnJobGroupId(sampleSlackJob({ dedupeId: "Ev1" }))).toBe(turnJobGroupId(sampleSlackJob({ dedupeId: "Ev2" })));
      expect(turnJobGroupId(sampleSlackJob({ conversationKey: "other" }))).not.toBe(turnJobGroupId(sampleSlackJob()));
      expect(turnJobGroupId(sampleSlackJob({ conversationKey: long }))).toMatch(/^[0-9a-f]{1,128}$/);
    });
  });

  describe("turnJobDeduplicationId", () => {
    it("returns the same id for a retried event and another for a new one", () => {
      expect(turnJobDeduplicationId(sampleSlackJob())).toBe(turnJobDeduplicationId(sampleSlackJob({ receivedAt: new Date(5).toISOString() })));
      expect(turnJobDeduplicationId(sampleSlackJob({ dedupeId: "Ev002" }))).not.toBe(turnJobDeduplicationId(sampleSlackJob()));
    });
  });

  describe("turnIdForJob", () => {
    it("returns the API's turn id for an API job", () => {
      expect(turnIdForJob(sampleSlackJob({ channel: "api", dedupeId: "6f1c1f39-1a1b-4c1d-8e1f-000000000001" } as Partial<TurnJob>))).toBe(
        "6f1c1f39-1a1b-4c1d-8e1f-000000000001",
      );
    });

    it("returns a stable UUID-shaped id per channel event", () => {
      const id = turnIdForJob(sampleSlackJob());
      expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(turnIdForJob(sampleSlackJob())).toBe(id);
      expect(turnIdForJob(sampleSlackJob({ dedupeId: "Ev002" }))).not.toBe(id);
    });
  });
});
