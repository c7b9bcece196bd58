/** What each run of the approvals sweep did (namespace `Threadwise`, dimension `service`), graphed and alarmed on by the stack. */
export const APPROVAL_SWEEP_METRIC_NAMES = {
  /** Approvals past their deadline that the sweep rejected as expired. */
  expired: "ApprovalsExpired",
  /** Turns the sweep handed to the worker to resume without their expired calls. */
  resumed: "ApprovalTurnsResumed",
  /** 1 for a run that left overdue approvals for the next: the sweep falls behind. */
  backlog: "ApprovalSweepBacklog",
} as const;
