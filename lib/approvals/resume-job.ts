import { turnJobSchema, type TurnJob } from "../queue/turn-job.js";
import { ValidationError } from "../errors.js";
import type { ApprovalDocument } from "../store/approval-store.js";

/** The job that resumes an approval's turn: the one its entry point recorded with it, marked with the decisions' key. */
export function resumeJobOf(approval: ApprovalDocument, resumeKey: string): TurnJob {
  const parsed = turnJobSchema.safeParse(approval.origin);
  if (!parsed.success) throw new ValidationError(`approval ${approval._id} does not record how its turn resumes`);
  return { ...parsed.data, resume: resumeKey };
}
