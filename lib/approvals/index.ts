export { ApprovalPolicy } from "./approval-policy.js";
export type { PolicyTool } from "./approval-policy.js";
export { Approvals, DEFAULT_APPROVALS_PAGE, DEFAULT_SWEEP_LIMIT } from "./approvals.js";
export type { ApprovalsOptions, DecisionResult, SweepResult } from "./approvals.js";
export { resumeJobOf } from "./resume-job.js";
export { APPROVAL_SWEEP_EVENT, isApprovalSweepEvent, type ApprovalSweepEvent } from "./sweep-event.js";
export { editedArgumentIssues, type ArgumentIssue } from "./edited-arguments.js";
