import { describe, expect, it } from "vitest";
import { resumeJobOf } from "../../lib/approvals/resume-job.js";
import { apiPrincipal } from "../../lib/auth/principal.js";
import { ValidationError } from "../../lib/errors.js";
import type { ApprovalDocument } from "../../lib/store/approval-store.js";

const origin = {
  channel: "api",
  conversationKey: "c1",
  owner: { issuer: "api", tenant: null, subject: "alice" },
  readScope: "user:alice",
  content: "create_follow_up",
  dedupeId: "6f1c1f39-1a1b-4c1d-8e1f-000000000001",
  receivedAt: "2026-12-01T10:00:00.000Z",
  principal: apiPrincipal("alice"),
  roles: ["manager"],
};

const approval = (fields: Partial<ApprovalDocument>) => ({ _id: "a1", ...fields }) as ApprovalDocument;

describe("resumeJobOf", () => {
  it("returns the job the approval's turn was queued with, marked with the decisions' key", () => {
    expect(resumeJobOf(approval({ origin }), "k1")).toEqual({ ...origin, resume: "k1" });
  });

  it("replaces a resume key the recorded job carried with the new one", () => {
    expect(resumeJobOf(approval({ origin: { ...origin, resume: "old" } }), "new").resume).toBe("new");
  });

  it("throws a ValidationError naming the approval when it records no job", () => {
    expect(() => resumeJobOf(approval({}), "k1")).toThrow(new ValidationError("approval a1 does not record how its turn resumes"));
  });

  it("throws a ValidationError when the recorded job is not a turn job", () => {
    expect(() => resumeJobOf(approval({ origin: { ...origin, channel: "fax" } }), "k1")).toThrow(ValidationError);
  });
});
