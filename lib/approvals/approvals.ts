import { createHash } from "node:crypto";
import type { FaultInjector } from "../agent/fault-points.js";
import type { Caller } from "../auth/principal.js";
import { ApprovalExpiredError, ForbiddenError, NotFoundError, ValidationError } from "../errors.js";
import type { ApprovalChoice, ApprovalDocument, ApprovalStatus, ApprovalStore } from "../store/approval-store.js";
import type { TurnStore } from "../store/turn-store.js";
import { ApprovalPolicy } from "./approval-policy.js";
import { editedArgumentIssues } from "./edited-arguments.js";

/** Most approvals one listing returns (a turn waits on one model response's calls; a conversation rarely has many). */
export const DEFAULT_APPROVALS_PAGE = 100;
/** Most overdue approvals one sweep expires: a run stays short, and the next takes the rest. */
export const DEFAULT_SWEEP_LIMIT = 100;

export interface ApprovalsOptions {
  store: ApprovalStore;
  turns: TurnStore;
  /**
   * Resumes a turn whose calls are all decided: in AWS its job goes to the worker's queue.
   * `resumeKey` names the set of decisions, so a repeated request does not queue a second job.
   * `edits`: edited arguments this store could not seal (a webhook's), which the job hands to the
   * worker to store sealed (`ApprovalStore.recordEdit`); then the job goes even if other calls still wait.
   */
  resume(approval: ApprovalDocument, resumeKey: string, edits?: Record<string, Record<string, unknown>>): Promise<void>;
  /** Test-only crash points; absent in production. */
  faults?: FaultInjector;
  /** Told of each decision a person took (not a repeat of one taken before): the audit log records it. Default: none. */
  onDecided?(approval: ApprovalDocument, caller: Caller): Promise<void>;
}

export interface DecisionResult {
  approval: ApprovalDocument;
  /** Whether this request took the decision (false: the same decision was taken before). */
  decided: boolean;
  /** Whether the turn was handed on to resume (every call of it is decided). */
  resumed: boolean;
}

/** What one sweep did: approvals it expired, turns it handed on, and whether overdue approvals are left for the next run. */
export interface SweepResult {
  expired: number;
  resumed: number;
  more: boolean;
}

/**
 * Decisions on tool calls waiting for a person, from any entry point (API, Slack, Teams,
 * console): who may decide, what an edit may contain, and resuming the turn once its calls are
 * all decided. The store owns the approvals' status, the turn store the turn's.
 */
export class Approvals {
  constructor(private readonly options: ApprovalsOptions) {}

  /** The conversation's latest {@link DEFAULT_APPROVALS_PAGE} approvals, oldest first; overdue ones are expired (and their turns resumed) first. */
  async list(conversationId: string, status?: ApprovalStatus): Promise<ApprovalDocument[]> {
    await this.settleDue(conversationId);
    return this.options.store.listByConversation(conversationId, { status, limit: DEFAULT_APPROVALS_PAGE });
  }

  async get(conversationId: string, approvalId: string): Promise<ApprovalDocument> {
    const approval = await this.options.store.get(approvalId);
    if (!approval || approval.conversationId !== conversationId) throw new NotFoundError(`approval ${approvalId} not found`);
    return approval;
  }

  /** The approval, when `caller` is among its approvers (else ForbiddenError): what an edit form shows before the decision. */
  async forDecision(conversationId: string, approvalId: string, caller: Caller): Promise<ApprovalDocument> {
    const approval = await this.get(conversationId, approvalId);
    if (!ApprovalPolicy.mayDecide(approval.approvers, approval.requester, caller)) {
      throw new ForbiddenError(`you may not decide approval ${approvalId}`);
    }
    return approval;
  }

  /**
   * Takes `caller`'s decision. Refused with ForbiddenError when the caller is not among the
   * approvers, ValidationError for edited arguments the recorded schema refuses
   * (`editedArgumentIssues`), and the store's errors for a decided, expired or superseded
   * approval. A repeated request (after a crash, a retry) answers as the first and hands the
   * turn on again if it has not resumed yet.
   */
  async decide(conversationId: string, approvalId: string, caller: Caller, choice: ApprovalChoice): Promise<DecisionResult> {
    const approval = await this.forDecision(conversationId, approvalId, caller);
    if (choice.kind === "edit") {
      const issues = editedArgumentIssues(approval.argsSchema, choice.args);
      if (issues.length > 0) {
        throw new ValidationError(
          `the edited arguments are not valid for ${approval.tool}`,
          issues.map((i) => ({ path: `args.${i.path}`, message: i.message })),
        );
      }
    }
    const { approval: decided, decided: fresh } = await this.options.store.decide(approvalId, choice, caller.principal).catch(async (error: unknown) => {
      // Expired now or before: the turn goes on without the call, the model told why.
      if (error instanceof ApprovalExpiredError) await this.settleTurn(approval.turnId, new Date());
      throw error;
    });
    this.options.faults?.at("after-decision");
    if (fresh) await this.options.onDecided?.(decided, caller);
    // Edited arguments the store kept none of (a webhook's, with contents sealed) go to the worker with the job.
    const handedOver = choice.kind === "edit" && decided.decision?.kind === "edit" && decided.decision.args === undefined;
    const { resumed } = await this.settleTurn(decided.turnId, new Date(), handedOver ? { [approvalId]: choice.args } : undefined);
    return { approval: decided, decided: fresh, resumed };
  }

  /** Expires the conversation's overdue approvals and resumes the turns that no longer wait on anyone (also those a crash left waiting). */
  async settleDue(conversationId: string, now = new Date()): Promise<void> {
    const waiting = await this.options.turns.list(conversationId, { status: "awaiting_approval", limit: DEFAULT_APPROVALS_PAGE });
    for (const turn of waiting) await this.resumeIfSettled(turn._id, now);
    await this.options.store.expireDue({ conversationId }, now);
  }

  /**
   * The scheduled sweep: rejects as expired the approvals past their deadline that nobody looked
   * at, and resumes their turns so the model is told. At most `limit` approvals a run, most
   * overdue first; `more` says the next run has work left. Safe to run twice or beside a person's
   * decision: only a pending approval past its deadline is expired, and a turn is handed on under
   * the key of its decisions, as a decision hands it on.
   */
  async sweep(options: { now?: Date; limit?: number } = {}): Promise<SweepResult> {
    const now = options.now ?? new Date();
    const limit = options.limit ?? DEFAULT_SWEEP_LIMIT;
    // One past the limit only says there is more: its turn is the next run's.
    const due = await this.options.store.overdue(now, limit + 1);
    const turnIds = [...new Set(due.slice(0, limit).map((a) => a.turnId))];
    const result: SweepResult = { expired: 0, resumed: 0, more: due.length > limit };
    for (const turnId of turnIds) {
      const settled = await this.settleTurn(turnId, now);
      result.resumed += Number(settled.resumed);
      result.expired += settled.expired;
    }
    return result;
  }

  /**
   * Resumes the turn if none of its calls waits any longer, then marks its overdue ones expired
   * (also when the turn no longer waits, so they do not hold up the sweep). In that order: a
   * crash in between leaves them pending and due, for the next sweep or visit to find.
   */
  private async settleTurn(turnId: string, now: Date, edits?: Record<string, Record<string, unknown>>): Promise<{ resumed: boolean; expired: number }> {
    const resumed = await this.resumeIfSettled(turnId, now, edits);
    return { resumed, expired: await this.options.store.expireDue({ turnId }, now) };
  }

  /** Hands the turn on to resume when it waits and none of its calls does (those past their deadline count as expired); returns whether it did. */
  private async resumeIfSettled(turnId: string, now: Date, edits?: Record<string, Record<string, unknown>>): Promise<boolean> {
    const { store, turns } = this.options;
    // The status alone: the webhooks decide with stores that cannot open the turn's sealed origin.
    if ((await turns.statusOf(turnId)) !== "awaiting_approval") return false;
    const approvals = (await store.listByTurn(turnId)).map((a) => (a.status === "pending" && a.deadline <= now ? { ...a, status: "expired" as const } : a));
    const settled = approvals.length > 0 && !approvals.some((a) => a.status === "pending");
    if (!settled && !edits) return false;
    const key = createHash("sha256")
      .update(JSON.stringify(approvals.map((a) => [a._id, a.status])))
      .digest("hex")
      .slice(0, 32);
    await this.options.resume(approvals[0], key, edits);
    this.options.faults?.at("after-resume-enqueued");
    return settled;
  }
}
