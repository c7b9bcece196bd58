export { ApprovalPolicy } from "./approval-policy.js";
export type { PolicyTool } from "./approval-policy.js";
export { Approvals, DEFAULT_APPROVALS_PAGE } from "./approvals.js";
export type { ApprovalsOptions, DecisionResult } from "./approvals.js";
export { resumeJobOf } from "./resume-job.js";
