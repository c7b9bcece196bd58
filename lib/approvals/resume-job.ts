import { turnJobSchema, type TurnJob } from "../queue/turn-job.js";
import { ValidationError } from "../errors.js";
import type { ApprovalDocument } from "../store/approval-store.js";

/** The question of a resume job: an approval keeps none, and the worker takes the turn's own (sealed) question instead (`TurnJobWorker`). */
export const RESUMED_QUESTION = "(resumed)";

/**
 * The job that resumes an approval's turn: the one its entry point recorded with it (without its question),
 * marked with the decisions' key, and carrying the edited arguments a webhook could not seal (`edits`).
 */
export function resumeJobOf(approval: ApprovalDocument, resumeKey: string, edits?: Record<string, Record<string, unknown>>): TurnJob {
  const parsed = turnJobSchema.safeParse({ content: RESUMED_QUESTION, ...approval.origin });
  if (!parsed.success) throw new ValidationError(`approval ${approval._id} does not record how its turn resumes`);
  return { ...parsed.data, resume: resumeKey, ...(edits && { edits }) };
}
