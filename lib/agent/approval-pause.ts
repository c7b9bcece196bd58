import type { StateSnapshot } from "@langchain/langgraph";
import type { Principal } from "../auth/principal.js";
import { argsHash, type ApprovalContext, type ApprovalDocument, type ApprovalStore } from "../store/approval-store.js";
import { addUsage, summarizeContext, ZERO_USAGE, type TurnContextSummary, type Usage } from "../store/turn-record.js";
import type { ClaimedTurn, TurnStore } from "../store/turn-store.js";
import type { WriteFence } from "../store/write-fence.js";
import type { ApprovalOutcome, ApprovalRequest, PendingCall } from "./approval-gate.js";

/** A call the turn waits on, as a turn's result names it. */
export interface WaitingApproval {
  approvalId: string;
  toolCallId: string;
  tool: string;
  args: Record<string, unknown>;
  expiresAt: string;
  /** The calls and outputs of the turn that led to it, for the approver (`approvalContextOf`). */
  context?: ApprovalContext;
}

/** Where calls waiting for a person are recorded and their decisions read, and how long they wait. */
export interface ApprovalPauseOptions {
  store: ApprovalStore;
  ttlMs: number;
  /** A tool's arguments JSON Schema, kept on its approvals so an edit is checked without the tools (`ToolRegistry.argumentsSchema`). */
  argumentsSchema?(toolName: string): Record<string, unknown> | undefined;
}

/** A turn paused for approvals: the calls it waits on, and what it has used so far. */
export interface PausedTurn {
  approvals: WaitingApproval[];
  usage: Usage;
  context: TurnContextSummary;
}

/** Every call of the thread's pending interrupts (a turn paused for approvals); empty when none is pending. */
export function waitingCalls(snapshot: Pick<StateSnapshot, "tasks">): PendingCall[] {
  return snapshot.tasks.flatMap((task) => task.interrupts.flatMap((i) => (i.value as ApprovalRequest | undefined)?.approvals ?? []));
}

/** How a settled approval resumes its call; `by` names the person as the model reads it. */
export function outcomeOf(approval: ApprovalDocument): ApprovalOutcome {
  const decision = approval.decision;
  if (!decision || decision.kind === "expire") return { kind: "expire", deadline: approval.deadline.toISOString() };
  const by = decision.by.subject;
  if (decision.kind === "edit") return { kind: "edit", by, args: decision.args };
  if (decision.kind === "reject") return { kind: "reject", by, ...(decision.reason !== undefined && { reason: decision.reason }) };
  return { kind: "approve", by };
}

/**
 * The turn's approval pause (docs/approvals.md, "How a turn waits"): records the calls the graph
 * stopped before, marks the turn waiting, and reads the decisions a resumed attempt goes on with.
 */
export class ApprovalPause {
  constructor(
    private readonly turns: Pick<TurnStore, "awaitApproval" | "listCalls">,
    private readonly options: ApprovalPauseOptions | undefined,
  ) {}

  /**
   * The graph paused before calls a person must decide: their approvals are recorded (a retried
   * attempt's are already there and keep their decisions), and the turn waits. Nothing of the
   * calls has run. Undefined when none waits any longer once the turn is marked waiting: the
   * caller goes on with the turn.
   */
  async pause(
    turn: ClaimedTurn,
    request: { requester: Principal; origin?: Record<string, unknown> },
    calls: PendingCall[],
    fence: WriteFence,
  ): Promise<PausedTurn | undefined> {
    const { turns, options: approvals } = this;
    if (!approvals) throw new TypeError("a turn paused for approval, but the runner has no approval store");
    const now = new Date();
    const deadline = new Date(now.getTime() + approvals.ttlMs);
    const docs: ApprovalDocument[] = calls.map((call) => {
      const schema = approvals.argumentsSchema?.(call.tool);
      return {
        _id: call.approvalId,
        conversationId: turn.conversationId,
        turnId: turn._id,
        toolCallId: call.toolCallId,
        tool: call.tool,
        args: call.args,
        argsHash: argsHash(call.args),
        ...(schema && { argsSchema: JSON.stringify(schema) }),
        requester: request.requester,
        approvers: call.approvers,
        ...(call.context && { context: call.context }),
        createdAt: now,
        deadline,
        status: "pending",
        ...(request.origin && { origin: request.origin }),
      };
    });
    await approvals.store.open(docs, fence);
    await turns.awaitApproval(turn, [...new Set(calls.map((c) => c.tool))], fence);
    // Read after that write: a decision between the two writes found the turn running and handed nothing on, so it is
    // this attempt's to go on; one after it also hands the turn on, and that job finds the turn taken or finished.
    const records = new Map((await approvals.store.listByTurn(turn._id)).map((a) => [a._id, a]));
    // In the order of the model's calls; those decided already (a retried attempt) are not waited on.
    const waiting = calls.flatMap((c) => records.get(c.approvalId) ?? []).filter((a) => a.status === "pending");
    if (waiting.length === 0) return undefined;
    const modelCalls = await turns.listCalls(turn._id);
    return {
      approvals: waiting.map((a) => ({
        approvalId: a._id,
        toolCallId: a.toolCallId,
        tool: a.tool,
        args: a.args,
        expiresAt: a.deadline.toISOString(),
        ...(a.context && { context: a.context }),
      })),
      usage: modelCalls.reduce((u, c) => addUsage(u, c.usage), ZERO_USAGE),
      context: summarizeContext(modelCalls),
    };
  }

  /**
   * The outcome of each waiting call once none is pending (approvals past their deadline are
   * expired first); undefined while one still waits, or before the approvals are recorded.
   */
  async outcomesOf(turnId: string, calls: PendingCall[]): Promise<Record<string, ApprovalOutcome> | undefined> {
    const store = this.options?.store;
    if (!store) return undefined;
    await store.expireDue({ turnId });
    const records = new Map((await store.listByTurn(turnId)).map((a) => [a._id, a]));
    const outcomes: Record<string, ApprovalOutcome> = {};
    for (const call of calls) {
      const record = records.get(call.approvalId);
      if (!record || record.status === "pending") return undefined;
      outcomes[call.approvalId] = outcomeOf(record);
    }
    return outcomes;
  }
}
